# The libc calls both preloads stand in for (dlsym(RTLD_NEXT)): one table,
# and what their waiting calls share (wait_args.h, the epoll glue):
# a convenience library linked into each module, never into a shared
# library of its own (RTLD_NEXT must start from the preload module).
noinst_LTLIBRARIES += libinterpose.la
libinterpose_la_SOURCES = \
	src/interpose/export.h \
	src/interpose/real.h \
	src/interpose/wait_args.h \
	src/interpose/mmsg.h \
	src/interpose/fortify_receives.h \
	src/interpose/edge.h \
	src/interpose/arrival_edges.h \
	src/interpose/arrival_edges.cc \
	src/interpose/own_calls.h \
	src/interpose/poll_calls.h \
	src/interpose/poll_calls.cc \
	src/interpose/dup_share.h \
	src/interpose/dup_share.cc \
	src/interpose/epoll_glue.h \
	src/interpose/epoll_glue.cc \
	src/interpose/signal_count.h \
	src/interpose/signal_count.cc \
	src/interpose/program_memory.h \
	src/interpose/program_memory.cc \
	src/interpose/passed_fds.h \
	src/interpose/passed_fds.cc \
	src/interpose/connected_options.h \
	src/interpose/connected_options.cc \
	src/interpose/sendfile_copy.h \
	src/interpose/sendfile_copy.cc \
	src/interpose/exec_calls.h \
	src/interpose/exec_calls.cc \
	src/interpose/spawn_actions.h \
	src/interpose/spawn_actions.cc \
	src/interpose/sandbox_calls.cc \
	src/interpose/syscall_calls.cc \
	src/interpose/real.cc
libinterpose_la_CPPFLAGS = $(AM_CPPFLAGS) -U_FORTIFY_SOURCE
libinterpose_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
