# Tensor-memory model (issue 7): tcgen05 spelling validator, descriptor and
# fragment tables (Tcgen05*), and the Tmem cp/shift/ld/st model (Tmem*).
mxpack_add_test(tcgen05_test tcgen05_test.cc TIMEOUT 120)
mxpack_add_test(tmem_test tmem_test.cc TIMEOUT 120)
