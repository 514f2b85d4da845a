# External programs nobody here wrote (Debian's rdmacm-utils: rstream,
# riostream, rcopy) run on librsocket.so through LD_PRELOAD.  Each script is
# an automake test (0 pass, 1 fail, 77 skip, 99 hard error); it finds the
# library in the build directory, which is the directory tests run from
# (or $top_builddir when set).  common.sh holds their shared helpers.
ext_test_scripts = \
	tests/ext/rstream.sh \
	tests/ext/riostream.sh \
	tests/ext/rcopy.sh \
	tests/ext/udpong.sh \
	tests/ext/udpong_netns.sh \
	tests/ext/dgram_spin.sh \
	tests/ext/netns.sh \
	tests/ext/no_rdma.sh \
	tests/ext/demo.sh \
	tests/ext/slipstream_config.sh \
	tests/ext/abi.sh \
	tests/ext/layers.sh \
	tests/ext/doc_paths.sh \
	tests/ext/format.sh \
	tests/ext/check_status.sh \
	tests/ext/status_filters.sh \
	tests/ext/preload.sh \
	tests/ext/preload_netns.sh \
	tests/ext/preload_netns_apps.sh \
	tests/ext/preload_netns_fallback.sh \
	tests/ext/preload_sandbox.sh \
	tests/ext/preload_exec.sh \
	tests/ext/preload_exec_listen.sh \
	tests/ext/preload_exec_apps.sh \
	tests/ext/preload_options.sh \
	tests/ext/vma_extra_header.sh \
	tests/ext/vma_stats.sh \
	tests/ext/vma_preload.sh \
	tests/ext/vma_netns.sh \
	tests/ext/vma_mcast.sh \
	tests/ext/vma_zcopy.sh \
	tests/ext/vma_xtreme.sh \
	tests/ext/vma_calls.sh \
	tests/ext/vma_extras.sh \
	tests/ext/vma_sockperf.sh \
	tests/ext/vma_tcp.sh \
	tests/ext/vma_tcp_extra.sh \
	tests/ext/vma_tcp_wire.sh \
	tests/ext/vma_options.sh \
	tests/ext/vma_runtimes.sh \
	tests/ext/fault_matrix.sh
dist_check_SCRIPTS += $(ext_test_scripts)
TESTS += $(ext_test_scripts)
EXTRA_DIST += tests/ext/common.sh tests/ext/check.sh tests/ext/vma_pair.sh
# Included by the C programs below.
EXTRA_DIST += tests/ext/test_addr.h tests/ext/test_expect.h tests/ext/unseen_syscall.h
# Sourced by udpong.sh and udpong_netns.sh; run by udpong_netns.sh.
EXTRA_DIST += tests/ext/udpong_cases.sh tests/ext/udp_tags.py
# nginx's config, sourced by preload_cases.sh and bench/preload_apps.sh;
# the program cases, sourced by preload.sh and the preload_netns_*.sh
# tests, whose namespaces preload_netns_setup.sh makes.
EXTRA_DIST += tests/ext/nginx_conf.sh tests/ext/preload_cases.sh tests/ext/preload_netns_setup.sh \
	tests/ext/libs_copy.sh
# Compiled by vma_extra_header.sh against the installed header.
EXTRA_DIST += tests/ext/vma_extra_layout.c tests/ext/vma_extra_sockperf.cc
# Compiled by vma_preload.sh against the installed header.
EXTRA_DIST += tests/ext/vma_preload_prog.c
# Compiled by vma_netns.sh.
EXTRA_DIST += tests/ext/vma_udp_echo.c tests/ext/vma_epoll.c
# Run by doc_paths.sh.
EXTRA_DIST += tests/ext/doc_paths.py
# Built and run by preload_sandbox.sh.
EXTRA_DIST += tests/ext/sandbox_prog.c
# Built and run by preload_exec.sh.
EXTRA_DIST += tests/ext/exec_prog.c tests/ext/exec_cxx_echo.cc
# Built and run by preload_exec_listen.sh.
EXTRA_DIST += tests/ext/exec_listen.c
# Built and run by preload_options.sh and vma_options.sh.
EXTRA_DIST += tests/ext/options_prog.c
# Built and run by fault_matrix.sh.
EXTRA_DIST += tests/ext/fault_prog.c tests/ext/fault_matrix.py
# Compiled by dgram_spin.sh.
EXTRA_DIST += tests/ext/dgram_spin_prog.c
# Compiled by vma_mcast.sh.
EXTRA_DIST += tests/ext/vma_mcast.c
# Compiled by vma_zcopy.sh (and bench/vma_zcopy.sh) against the installed header.
EXTRA_DIST += tests/ext/vma_zcopy_prog.c
# Compiled by vma_xtreme.sh against the installed header.
EXTRA_DIST += tests/ext/vma_xtreme_prog.c
# Compiled by vma_calls.sh (and by vma_extras.sh for its peer).
EXTRA_DIST += tests/ext/vma_calls.c
# Run by vma_tcp.sh.
EXTRA_DIST += tests/ext/vma_tcp_client.py tests/ext/vma_tcp_echo.py tests/ext/vma_edge_sets.py tests/ext/vma_tcp_forking.py tests/ext/vma_tcp_cases.py \
	tests/ext/vma_tcp_linger.py tests/ext/vma_tcp_faults.py tests/ext/vma_tcp_scale.py \
	tests/ext/vma_tcp_crafted.py
# Compiled by vma_extras.sh against the installed header.
EXTRA_DIST += tests/ext/vma_extras_prog.c
# Compiled by vma_tcp_extra.sh against the installed header.
EXTRA_DIST += tests/ext/vma_tcp_extra_prog.c
# Run by vma_runtimes.sh, preload.sh and preload_netns_apps.sh (preload_cases.sh).
EXTRA_DIST += tests/ext/java_echo.java tests/ext/node_http.js
# Run by vma_tcp_wire.sh.
EXTRA_DIST += tests/ext/lossy_wire.py tests/ext/both_ways.py
# Time limits (tests/local.mk), each about 5-10 times the script's run on
# a busy 2-core machine (2-22 s); the scripts bound their programs too.
TEST_LIMITS += rstream.sh=180 riostream.sh=120 rcopy.sh=60 netns.sh=90 \
	no_rdma.sh=60 demo.sh=360 preload.sh=360 preload_netns.sh=60 \
	preload_exec.sh=120 preload_exec_listen.sh=60 preload_exec_apps.sh=180 \
	preload_netns_apps.sh=300 preload_netns_fallback.sh=300 udpong.sh=90 \
	udpong_netns.sh=90 dgram_spin.sh=60 \
	vma_extra_header.sh=300 vma_stats.sh=60 vma_preload.sh=120 \
	vma_netns.sh=240 vma_mcast.sh=120 vma_zcopy.sh=120 vma_xtreme.sh=120 \
	vma_calls.sh=120 vma_extras.sh=120 vma_sockperf.sh=120 vma_tcp.sh=480 \
	vma_tcp_extra.sh=120 vma_tcp_wire.sh=240 vma_runtimes.sh=120 vma_options.sh=120
