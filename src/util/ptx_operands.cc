// Splitting and classification of PTX operand lists (see operands.h).
#include "src/util/ptx_operands.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace mxpack {
namespace ptx {
namespace {

bool IsFollowSym(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '$';
}

// PTX identifiers: [a-zA-Z]{followsym}* or [_$%]{followsym}+.
bool IsIdentifier(absl::string_view s) {
  if (s.empty()) return false;
  const char c = s[0];
  size_t i = 1;
  if (absl::ascii_isalpha(static_cast<unsigned char>(c))) {
  } else if (c == '_' || c == '$' || c == '%') {
    if (s.size() < 2) return false;
  } else {
    return false;
  }
  for (; i < s.size(); ++i) {
    if (!IsFollowSym(s[i])) return false;
  }
  return true;
}

bool IsHexDigits(absl::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Integer literal: [-]decimal, [-]0x hex (an optional U suffix is PTX too).
bool ParseInteger(absl::string_view s, int64_t* value) {
  s = absl::StripAsciiWhitespace(s);
  bool negative = absl::ConsumePrefix(&s, "-");
  absl::ConsumeSuffix(&s, "U");
  if (s.empty()) return false;
  uint64_t v = 0;
  bool ok;
  if (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) {
    ok = s.size() > 2 && absl::SimpleHexAtoi(s.substr(2), &v);
  } else {
    for (char c : s) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    ok = absl::SimpleAtoi(s, &v);
  }
  if (!ok) return false;
  *value = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// Float literal: digits '.' digits (decimal) or 0f<8 hex> / 0d<16 hex>.
bool IsFloatLiteral(absl::string_view s) {
  absl::ConsumePrefix(&s, "-");
  if (s.size() > 2 && (s[0] == '0') && (s[1] == 'f' || s[1] == 'F')) {
    return IsHexDigits(s.substr(2), 8);
  }
  if (s.size() > 2 && (s[0] == '0') && (s[1] == 'd' || s[1] == 'D')) {
    return IsHexDigits(s.substr(2), 16);
  }
  if (s.find('.') == absl::string_view::npos) return false;
  double d;
  return absl::SimpleAtod(s, &d) &&
         absl::ascii_isdigit(static_cast<unsigned char>(s[0]));
}

absl::Status Bad(absl::string_view what, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("operand '", what, "': expected ", expected));
}

// A scalar: register, immediate or sink.
absl::StatusOr<Operand> ParseScalar(absl::string_view s) {
  Operand op;
  op.text = std::string(s);
  if (s == "_") {
    op.kind = OperandKind::kSink;
    return op;
  }
  if (IsIdentifier(s)) {
    op.kind = OperandKind::kRegister;
    return op;
  }
  int64_t v;
  if (ParseInteger(s, &v)) {
    op.kind = OperandKind::kImmediate;
    return op;
  }
  if (IsFloatLiteral(s)) {
    op.kind = OperandKind::kImmediate;
    op.float_literal = true;
    return op;
  }
  return Bad(s, "a register (%r1), an immediate or '_'");
}

absl::StatusOr<Operand> ParseAddress(absl::string_view s) {
  Operand op;
  op.kind = OperandKind::kAddress;
  op.text = std::string(s);
  absl::string_view in = absl::StripAsciiWhitespace(s.substr(1, s.size() - 2));
  absl::string_view base = in;
  absl::string_view off;
  const size_t plus = in.find('+');
  if (plus != absl::string_view::npos) {
    base = absl::StripAsciiWhitespace(in.substr(0, plus));
    off = absl::StripAsciiWhitespace(in.substr(plus + 1));
    if (!ParseInteger(off, &op.offset)) {
      return Bad(s, "[reg], [reg+imm] or [reg+-imm] with an integer imm");
    }
  }
  op.base = std::string(base);
  int64_t v;
  if (IsIdentifier(base)) return op;
  if (plus == absl::string_view::npos && ParseInteger(base, &v)) {
    op.base_is_immediate = true;
    return op;
  }
  return Bad(s, "[reg], [reg+imm] or [reg+-imm] (PTX has no [reg-imm])");
}

}  // namespace

absl::StatusOr<std::vector<Operand>> ParseOperands(absl::string_view text) {
  std::vector<Operand> out;
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return out;
  // Top-level split.
  std::vector<absl::string_view> parts;
  int brace = 0, bracket = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{') ++brace;
    if (c == '}') --brace;
    if (c == '[') ++bracket;
    if (c == ']') --bracket;
    if (brace < 0 || bracket < 0 || brace > 1 || bracket > 1) {
      return Bad(text, "balanced, unnested '{...}' and '[...]'");
    }
    if (c == ',' && brace == 0 && bracket == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (brace != 0 || bracket != 0) {
    return Bad(text, "balanced '{...}' and '[...]'");
  }
  parts.push_back(text.substr(start));
  for (absl::string_view p : parts) {
    p = absl::StripAsciiWhitespace(p);
    if (p.empty()) return Bad(text, "no empty operand between commas");
    if (p.front() == '[') {
      if (p.back() != ']') return Bad(p, "an address '[...]'");
      absl::StatusOr<Operand> a = ParseAddress(p);
      if (!a.ok()) return a.status();
      out.push_back(*std::move(a));
      continue;
    }
    if (p.front() == '{') {
      if (p.back() != '}') return Bad(p, "a vector '{a, b, ...}'");
      Operand v;
      v.kind = OperandKind::kVector;
      v.text = std::string(p);
      absl::string_view in = p.substr(1, p.size() - 2);
      size_t s = 0;
      for (size_t i = 0; i <= in.size(); ++i) {
        if (i == in.size() || in[i] == ',') {
          absl::string_view e = absl::StripAsciiWhitespace(in.substr(s, i - s));
          if (e.empty()) return Bad(p, "no empty vector element");
          absl::StatusOr<Operand> el = ParseScalar(e);
          if (!el.ok()) return el.status();
          v.elements.push_back(*std::move(el));
          s = i + 1;
        }
      }
      out.push_back(std::move(v));
      continue;
    }
    absl::StatusOr<Operand> sc = ParseScalar(p);
    if (!sc.ok()) return sc.status();
    out.push_back(*std::move(sc));
  }
  return out;
}

RegClass RegClassOf(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "%")) return RegClass::kUnknown;
  size_t i = 0;
  while (i < name.size() &&
         absl::ascii_isalpha(static_cast<unsigned char>(name[i])))
    ++i;
  const absl::string_view prefix = name.substr(0, i);
  const absl::string_view digits = name.substr(i);
  if (digits.empty()) return RegClass::kUnknown;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)))
      return RegClass::kUnknown;
  }
  static constexpr struct {
    const char* prefix;
    RegClass cls;
  } kClasses[] = {
      {"rc", RegClass::kB8},  {"rs", RegClass::kB16},   {"r", RegClass::kB32},
      {"rd", RegClass::kB64}, {"f", RegClass::kF32},    {"fd", RegClass::kF64},
      {"h", RegClass::kF16},  {"hh", RegClass::kF16x2}, {"p", RegClass::kPred}};
  for (const auto& c : kClasses) {
    if (prefix == c.prefix) return c.cls;
  }
  return RegClass::kUnknown;
}

int RegClassBits(RegClass c) {
  switch (c) {
    case RegClass::kB8:
      return 8;
    case RegClass::kB16:
    case RegClass::kF16:
      return 16;
    case RegClass::kB32:
    case RegClass::kF32:
    case RegClass::kF16x2:
      return 32;
    case RegClass::kB64:
    case RegClass::kF64:
      return 64;
    case RegClass::kPred:
      return 1;
    case RegClass::kUnknown:
      return 0;
  }
  return 0;
}

absl::string_view RegClassName(RegClass c) {
  switch (c) {
    case RegClass::kB8:
      return ".b8";
    case RegClass::kB16:
      return ".b16";
    case RegClass::kB32:
      return ".b32";
    case RegClass::kB64:
      return ".b64";
    case RegClass::kF32:
      return ".f32";
    case RegClass::kF64:
      return ".f64";
    case RegClass::kF16:
      return ".f16";
    case RegClass::kF16x2:
      return ".f16x2";
    case RegClass::kPred:
      return ".pred";
    case RegClass::kUnknown:
      return "(undeclared)";
  }
  return "?";
}

}  // namespace ptx
}  // namespace mxpack
