# bench/: Google Benchmark fixtures, rsockets against kernel TCP in the same
# run (bench/run.sh prints the ratios), and bench/rstream.sh (rdmacm-utils'
# rstream latency on the preloaded library against plain kernel sockets).
# bench/instr.sh counts instructions per call with callgrind (bench/rsocket_instr);
# bench/ab.sh compares two builds on shm latency over many alternating runs;
# bench/udpong.sh datagram echo latency and rate against kernel UDP;
# bench/vma_sockperf.sh sockperf under libvma.so; bench/vma_tcp_tput.sh
# iperf3 and redis on libvma.so's TCP; bench/vma_tcp_conn.sh nginx's new
# connections a second on it; bench/vma_tcp_pingpong.sh 64 B TCP
# round trips with its receive paths (bench/tcp_pingpong.c); bench/vma_zcopy.sh the 64 B
# receive rate of recvfrom_zcopy, offloaded recv and the kernel's (its 64 B
# source: bench/udp_blast.c);
# bench/preload_apps.sh redis, iperf3, memcached, nginx and sockperf,
# plain against preloaded;
# bench/soak.sh a timed mixed load against one long-lived bench/soak_peer
# that must not grow (descriptors, threads, RSS, memfds, /dev/shm).
# Nothing here is installed; the scripts are run by hand from the build dir.
EXTRA_DIST += bench/run.sh bench/rstream.sh bench/instr.sh bench/ab.sh bench/udpong.sh bench/vma_sockperf.sh bench/vma_tcp_tput.sh \
	bench/vma_tcp_pingpong.sh bench/vma_tcp_conn.sh bench/tcp_pingpong.c \
	bench/vma_zcopy.sh bench/udp_blast.c bench/preload_apps.sh bench/soak.sh

noinst_PROGRAMS += bench/rsocket_instr
bench_rsocket_instr_SOURCES = bench/rsocket_instr.cc
bench_rsocket_instr_LDADD = librsocket.la libslipstream.la $(PTHREAD_LIBS)

noinst_PROGRAMS += bench/soak_peer
bench_soak_peer_SOURCES = bench/soak_peer.cc
bench_soak_peer_LDADD = librsocket.la libslipstream.la $(PTHREAD_LIBS)

if HAVE_GBENCH
noinst_PROGRAMS += bench/rsocket_bench
bench_rsocket_bench_SOURCES = \
	bench/rsocket_bench.cc \
	bench/dgram_echo.h \
	bench/dgram_echo.cc \
	tools/demo_transport.h \
	tools/demo_transport.cc
bench_rsocket_bench_LDADD = librsocket.la libslipstream.la -lbenchmark $(PTHREAD_LIBS)
endif
