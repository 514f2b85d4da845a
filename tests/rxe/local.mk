# tests/rxe/: real RDMA verbs on machines whose kernel has none.  rxe-vm.sh
# boots Debian's kernel in a throw-away qemu guest with Soft-RoCE (rxe0 on a
# guest-only dummy netdev) and runs a command there, the build and source
# trees mounted at their own paths; smoke.sh proves the verbs are real.
# Not in TESTS: `make check-rxe` runs it on its own (README.md there).
# RXE_VM_FLAGS takes rxe-vm.sh's options (-t SECS, -m MB, -v).
RXE_VM = bash $(abs_top_srcdir)/tests/rxe/rxe-vm.sh
RXE_VM_FLAGS = -t 300
EXTRA_DIST += tests/rxe/README.md tests/rxe/rxe-vm.sh tests/rxe/smoke.sh

.PHONY: check-rxe
check-rxe:
	$(RXE_VM) $(RXE_VM_FLAGS) -s '$(abs_top_builddir)' -s '$(abs_top_srcdir)' \
	  -- bash '$(abs_top_srcdir)/tests/rxe/smoke.sh'
