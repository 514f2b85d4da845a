# Connection providers: the interface, selection, the software providers
# (soft: tcp, shm) and verbs (rdma_cm + RC queue pairs).
libslipstream_la_SOURCES += \
	src/core/prov/provider.h \
	src/core/prov/ring.h \
	src/core/prov/factory.h \
	src/core/prov/factory.cc \
	src/core/prov/listener_set.h \
	src/core/prov/listener_set.cc \
	src/core/prov/soft/frame.h \
	src/core/prov/soft/region_table.h \
	src/core/prov/soft/region_table.cc \
	src/core/prov/soft/stream_endpoint.h \
	src/core/prov/soft/stream_endpoint.cc \
	src/core/prov/soft/listener.h \
	src/core/prov/soft/listener.cc \
	src/core/prov/soft/lingering_close.h \
	src/core/prov/soft/lingering_close.cc
libslipstream_la_SOURCES += \
	src/core/prov/shm/ring.h \
	src/core/prov/shm/shm_endpoint.h \
	src/core/prov/shm/shm_endpoint.cc
libslipstream_la_SOURCES += \
	src/core/prov/verbs/cm_events.h \
	src/core/prov/verbs/cm_events.cc \
	src/core/prov/verbs/msg_send.h \
	src/core/prov/verbs/msg_send.cc \
	src/core/prov/verbs/verbs_endpoint.h \
	src/core/prov/verbs/verbs_endpoint.cc \
	src/core/prov/verbs/verbs_listener.h \
	src/core/prov/verbs/verbs_listener.cc

core_unit_tests_SOURCES += tests/core/prov_caps_test.cc
