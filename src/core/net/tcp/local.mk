# core/net/tcp: the userspace TCP's parts, one concern a file (README.md).
# Wire formats, timers, RTO, congestion control, SACK ranges and one
# connection's state machine with its loss recovery: pure code, tested
# against scripts and on a fake wire; libvma.so's TCP offload runs it.
libslipstream_core_la_SOURCES += \
	src/core/net/tcp/seq.h \
	src/core/net/tcp/header.h \
	src/core/net/tcp/header.cc \
	src/core/net/tcp/options.h \
	src/core/net/tcp/options.cc \
	src/core/net/tcp/timer_queue.h \
	src/core/net/tcp/timer_queue.cc \
	src/core/net/tcp/rtt.h \
	src/core/net/tcp/rtt.cc \
	src/core/net/tcp/congestion.h \
	src/core/net/tcp/congestion.cc \
	src/core/net/tcp/seq_ranges.h \
	src/core/net/tcp/seq_ranges.cc \
	src/core/net/tcp/send_buffer.h \
	src/core/net/tcp/send_buffer.cc \
	src/core/net/tcp/receive_queue.h \
	src/core/net/tcp/receive_queue.cc \
	src/core/net/tcp/rcv_buf_tuner.h \
	src/core/net/tcp/rcv_buf_tuner.cc \
	src/core/net/tcp/connection.h \
	src/core/net/tcp/connection.cc \
	src/core/net/tcp/input.cc \
	src/core/net/tcp/output.cc \
	src/core/net/tcp/timers.cc \
	src/core/net/tcp/sent_log.h \
	src/core/net/tcp/sent_log.cc \
	src/core/net/tcp/recovery.cc \
	src/core/net/tcp/handover.h \
	src/core/net/tcp/handover.cc \
	src/core/net/tcp/handover_codec.h \
	src/core/net/tcp/handover_codec.cc \
	src/core/net/tcp/isn.h \
	src/core/net/tcp/isn.cc \
	src/core/net/tcp/listener.h \
	src/core/net/tcp/listener.cc \
	src/core/net/tcp/syn_cookie.h \
	src/core/net/tcp/syn_cookie.cc \
	src/core/net/tcp/table.h \
	src/core/net/tcp/table.cc \
	src/core/net/tcp/gso_batch.h \
	src/core/net/tcp/gso_batch.cc \
	src/core/net/tcp/stack.h \
	src/core/net/tcp/stack_calls.cc \
	src/core/net/tcp/stack_input.cc \
	src/core/net/tcp/stack_parts.h \
	src/core/net/tcp/stack_path.cc \
	src/core/net/tcp/stack_steering.cc \
	src/core/net/tcp/stack_ready.cc \
	src/core/net/tcp/stack_exit.cc

core_unit_tests_SOURCES += \
	tests/core/net_tcp_header_test.cc \
	tests/core/net_tcp_options_test.cc \
	tests/core/net_tcp_timer_queue_test.cc \
	tests/core/net_tcp_rtt_test.cc \
	tests/core/net_tcp_congestion_test.cc \
	tests/core/net_tcp_seq_ranges_test.cc \
	tests/core/net_tcp_send_buffer_test.cc \
	tests/core/net_tcp_gso_batch_test.cc \
	tests/core/tcp_room_sink.h \
	tests/core/tcp_script.h \
	tests/core/tcp_script.cc \
	tests/core/net_tcp_script_test.cc \
	tests/core/tcp_wire.h \
	tests/core/tcp_wire.cc \
	tests/core/net_tcp_pair_test.cc \
	tests/core/net_tcp_handover_test.cc \
	tests/core/net_tcp_listener_test.cc \
	tests/core/net_tcp_receive_queue_test.cc \
	tests/core/net_tcp_rcv_buf_tuner_test.cc \
	tests/core/net_tcp_table_test.cc

EXTRA_DIST += tests/core/tcp_scripts
