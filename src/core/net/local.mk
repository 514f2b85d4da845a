# core/net: the userspace Ethernet, IPv4, IPv6 and UDP layer over ring
# providers (frames parsed and built, checksums, routes and neighbours from
# the kernel by rtnetlink). Each part adds its sources to core below.

# Frames: parse and verify a received one, build one to send (pure code).
libslipstream_core_la_SOURCES += \
	src/core/net/byte_order.h \
	src/core/net/checksum.h \
	src/core/net/checksum.cc \
	src/core/net/ethernet.h \
	src/core/net/ipv4.h \
	src/core/net/ipv6.h \
	src/core/net/udp.h \
	src/core/net/udp.cc \
	src/core/net/frame_fields.h \
	src/core/net/frame_reason.h \
	src/core/net/frame_reason.cc \
	src/core/net/frame_parse.h \
	src/core/net/frame_parse.cc \
	src/core/net/frame_build.h \
	src/core/net/frame_build.cc

core_unit_tests_SOURCES += \
	tests/core/net_frame_util.h \
	tests/core/net_checksum_test.cc \
	tests/core/net_frame_parse_test.cc \
	tests/core/net_frame_build_test.cc

# Routes, links, addresses and neighbours from the kernel by rtnetlink
# (libmnl), kept current by subscription: NetlinkView.
libslipstream_core_la_SOURCES += \
	src/core/net/link_table.cc \
	src/core/net/link_table.h \
	src/core/net/neigh_table.cc \
	src/core/net/neigh_table.h \
	src/core/net/netlink_addr.cc \
	src/core/net/netlink_addr.h \
	src/core/net/netlink_socket.cc \
	src/core/net/netlink_socket.h \
	src/core/net/netlink_view.cc \
	src/core/net/netlink_view.h \
	src/core/net/route_query.cc \
	src/core/net/route_query.h

# UDP endpoints over ring providers: bind (steering + demux), receive
# (parse, demux, zero-copy queues), send (route, neighbour, build, tx ring).
libslipstream_core_la_SOURCES += \
	src/core/net/multicast.h \
	src/core/net/multicast.cc \
	src/core/net/rx_segment.h \
	src/core/net/steered_flow.h \
	src/core/net/frame_tx.h \
	src/core/net/frame_tx.cc \
	src/core/net/packet_tx.h \
	src/core/net/packet_tx.cc \
	src/core/net/udp_stack.h \
	src/core/net/udp_stack.cc \
	src/core/net/udp_tx.h \
	src/core/net/udp_tx.cc \
	src/core/net/udp_route.h \
	src/core/net/udp_route.cc

core_unit_tests_SOURCES += tests/core/net_frame_tx_test.cc
core_unit_tests_SOURCES += tests/core/net_udp_stack_test.cc tests/core/net_multicast_test.cc
