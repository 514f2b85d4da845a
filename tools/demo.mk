# tools/slipstream-demo: kernel TCP against rsockets (shm and tcp providers)
# on loopback, latency and bandwidth side by side. tools/demo_transport.*
# (the forked server, the exchanges) is shared with bench/rsocket_bench.
bin_PROGRAMS += tools/slipstream-demo
tools_slipstream_demo_SOURCES = \
	tools/slipstream-demo.cc \
	tools/demo_floor.h \
	tools/demo_floor.cc \
	tools/demo_transport.h \
	tools/demo_transport.cc
tools_slipstream_demo_LDADD = librsocket.la libslipstream.la $(PTHREAD_LIBS)
