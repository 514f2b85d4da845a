# conf: the rsocket configuration files, each holding its built-in default,
# installed to $(rsconfdir) (${sysconfdir}/rdma/rsocket; DESTDIR respected).
dist_rsconf_DATA = \
	conf/rsocket/inline_default \
	conf/rsocket/iomap_size \
	conf/rsocket/mem_default \
	conf/rsocket/polling_time \
	conf/rsocket/rqsize_default \
	conf/rsocket/sqsize_default \
	conf/rsocket/wake_up_interval \
	conf/rsocket/wmem_default
# The VMA face's rules file (libvma.conf(5)), as ${sysconfdir}/libvma.conf,
# where libvmacompat looks unless VMA_CONFIG_FILE says otherwise.
dist_sysconf_DATA = conf/libvma.conf
