# The tcp provider: the util stream over kernel TCP.
libslipstream_core_la_SOURCES += \
	src/core/prov/tcp/tcp_endpoint.h \
	src/core/prov/tcp/tcp_endpoint.cc \
	src/core/prov/tcp/tcp_provider.cc \
	src/core/prov/tcp/side_probe.h \
	src/core/prov/tcp/side_probe.cc \
	src/core/prov/tcp/side_listener.h \
	src/core/prov/tcp/side_listener.cc
