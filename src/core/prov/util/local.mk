# What the stream providers (tcp, shm) share: frames, the handshake, the
# stream endpoint and listener, the region table, the lingering close.
libslipstream_core_la_SOURCES += \
	src/core/prov/util/frame.h \
	src/core/prov/util/region_table.h \
	src/core/prov/util/region_table.cc \
	src/core/prov/util/stream_endpoint.h \
	src/core/prov/util/stream_endpoint.cc \
	src/core/prov/util/stream_handover.cc \
	src/core/prov/util/stream_listener.h \
	src/core/prov/util/stream_listener.cc \
	src/core/prov/util/lingering_close.h \
	src/core/prov/util/lingering_close.cc
