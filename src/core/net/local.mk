# core/net: the userspace Ethernet, IPv4, IPv6 and UDP layer over ring
# providers (frames parsed and built, checksums, routes and neighbours from
# the kernel by rtnetlink). Each part adds its sources to core below.
