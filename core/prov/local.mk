# Connection providers: the interface, selection, the software providers
# (soft: tcp, shm) and verbs (rdma_cm + RC queue pairs).
libslipstream_la_SOURCES += \
	core/prov/provider.h \
	core/prov/factory.h \
	core/prov/factory.cc \
	core/prov/listener_set.h \
	core/prov/listener_set.cc \
	core/prov/soft/frame.h \
	core/prov/soft/region_table.h \
	core/prov/soft/region_table.cc \
	core/prov/soft/stream_endpoint.h \
	core/prov/soft/stream_endpoint.cc \
	core/prov/soft/listener.h \
	core/prov/soft/listener.cc \
	core/prov/soft/lingering_close.h \
	core/prov/soft/lingering_close.cc
libslipstream_la_SOURCES += \
	core/prov/shm/ring.h \
	core/prov/shm/shm_endpoint.h \
	core/prov/shm/shm_endpoint.cc
libslipstream_la_SOURCES += \
	core/prov/verbs/cm_events.h \
	core/prov/verbs/cm_events.cc \
	core/prov/verbs/msg_send.h \
	core/prov/verbs/msg_send.cc \
	core/prov/verbs/verbs_endpoint.h \
	core/prov/verbs/verbs_endpoint.cc \
	core/prov/verbs/verbs_listener.h \
	core/prov/verbs/verbs_listener.cc

core_unit_tests_SOURCES += tests/core/prov_caps_test.cc
