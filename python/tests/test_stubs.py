"""The installed type stubs (__init__.pyi) declare every public name with the
runtime's parameter names, and every public function has a docstring."""

import ast
import inspect
import os

import mxpack


def test_stubs_match_the_runtime():
    path = os.path.join(os.path.dirname(mxpack.__file__), "__init__.pyi")
    tree = ast.parse(open(path).read())
    stubs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert sorted(set(mxpack.__all__) - set(stubs)) == []
    for name in mxpack.__all__:
        obj = getattr(mxpack, name)
        assert inspect.getdoc(obj), f"{name} has no docstring"
        node = stubs[name]
        if isinstance(node, ast.FunctionDef):
            declared = [a.arg for a in node.args.args + node.args.kwonlyargs]
            assert declared == list(inspect.signature(obj).parameters), name
    assert os.path.exists(os.path.join(os.path.dirname(mxpack.__file__), "py.typed"))
