# Manual pages (all hand-written groff; alias pages are .so links).
dist_man_MANS += \
	man/raccept.3 \
	man/rbind.3 \
	man/rclose.3 \
	man/rconnect.3 \
	man/rfcntl.3 \
	man/rgetpeername.3 \
	man/rgetsockname.3 \
	man/rgetsockopt.3 \
	man/riomap.3 \
	man/riounmap.3 \
	man/riowrite.3 \
	man/rlisten.3 \
	man/rpoll.3 \
	man/rread.3 \
	man/rreadv.3 \
	man/rrecv.3 \
	man/rrecvfrom.3 \
	man/rrecvmsg.3 \
	man/rselect.3 \
	man/rsend.3 \
	man/rsendmsg.3 \
	man/rsendto.3 \
	man/rsetsockopt.3 \
	man/rshutdown.3 \
	man/rsocket.3 \
	man/librspreload.7 \
	man/libvma.conf.5 \
	man/libvmacompat.7 \
	man/rsocket.7 \
	man/rwrite.3 \
	man/rwritev.3 \
	man/slipstream-config.1 \
	man/slipstream-demo.1 \
	man/slipstream.7
