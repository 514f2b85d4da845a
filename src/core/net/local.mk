# core/net: the userspace Ethernet, IPv4, IPv6 and UDP layer over ring
# providers (frames parsed and built, checksums, routes and neighbours from
# the kernel by rtnetlink). Each part adds its sources to core below.
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
