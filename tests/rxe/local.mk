# tests/rxe/: real RDMA verbs on machines whose kernel has none.  rxe-vm.sh
# boots Debian's kernel in a throw-away qemu guest with Soft-RoCE (rxe0 on a
# guest-only dummy netdev) and runs a command there, the build and source
# trees mounted at their own paths; smoke.sh proves the verbs are real,
# interop.sh pits Debian's rdmacm-utils against ours on them, figures.sh
# prints rstream's figures.  check.sh runs smoke, interop and the
# conformance suite in one boot.
# Not in TESTS: `make check-rxe` and `make rxe-figures` run on their own
# (README.md there).  RXE_VM_FLAGS takes rxe-vm.sh's options (-t SECS,
# -m MB, -v); RXE_ENV, env(1) assignments for the guest side, e.g.
# RXE_ENV='RXE_PROVIDER=tcp RXE_ONLY=ours:ours'.
RXE_VM = bash $(abs_top_srcdir)/tests/rxe/rxe-vm.sh
# The whole boot's limit: each step has its own (check.sh), so this only
# bounds the sum, which a loaded host stretches (TCG): 1800 s was reached
# once with a cold TSan build and other work beside the guest.
RXE_VM_FLAGS = -t 2700
RXE_ENV =
# RXE_SAN_BUILD=DIR (a build configured with --enable-sanitizers, e.g.
# ../build-san): check-rxe's boot also runs the verbs suites' IPv4 cases on
# rxe0 from it under ASan/UBSan (tests/rxe/check.sh), in 2 GiB.
RXE_SAN_BUILD =
RXE_RUN = $(RXE_VM) $(RXE_VM_FLAGS) $(if $(RXE_SAN_BUILD),-m 2048 -s '$(RXE_SAN_BUILD)') \
	-s '$(abs_top_builddir)' -s '$(abs_top_srcdir)' -- env $(RXE_ENV) \
	$(if $(RXE_SAN_BUILD),RXE_SAN_BUILD='$(abspath $(RXE_SAN_BUILD))')
EXTRA_DIST += tests/rxe/README.md tests/rxe/rxe-vm.sh tests/rxe/smoke.sh \
	tests/rxe/siw-module.sh \
	tests/rxe/common.sh tests/rxe/interop.sh tests/rxe/preload.sh tests/rxe/figures.sh tests/rxe/check.sh \
	tests/rxe/stress.sh tests/rxe/udpong.sh tests/rxe/apps.sh

.PHONY: check-rxe check-rxe-san rxe-figures
check-rxe:
	$(RXE_RUN) bash '$(abs_top_srcdir)/tests/rxe/check.sh' '$(abs_top_builddir)'

# For a build configured with --enable-sanitizers: the GoogleTest suites on
# rxe0 (IPv4 conformance and hostile peers), under ASan/UBSan; siw0's
# iWARP path runs unsanitized in check-rxe.
check-rxe-san:
	$(RXE_VM) -t 1500 -m 2048 -s '$(abs_top_builddir)' -s '$(abs_top_srcdir)' -- \
	  env ASAN_OPTIONS=detect_leaks=1 RXE_CHECK_SUITES_ONLY=1 RXE_CHECK_SIW=0 \
	  RXE_CONFORMANCE_FILTER='*verbs_v4*:VerbsHostile*' \
	  bash '$(abs_top_srcdir)/tests/rxe/check.sh' '$(abs_top_builddir)'

rxe-figures:
	$(RXE_RUN) bash '$(abs_top_srcdir)/tests/rxe/figures.sh' '$(abs_top_builddir)'
