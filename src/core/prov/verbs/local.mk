# The verbs provider: rdma_cm and RC queue pairs, wire-compatible with rsockets.
libslipstream_core_la_SOURCES += \
	src/core/prov/verbs/cm_events.h \
	src/core/prov/verbs/cm_events.cc \
	src/core/prov/verbs/cm_reaper.h \
	src/core/prov/verbs/cm_reaper.cc \
	src/core/prov/verbs/msg_send.h \
	src/core/prov/verbs/msg_send.cc \
	src/core/prov/verbs/verbs_endpoint.h \
	src/core/prov/verbs/verbs_endpoint.cc \
	src/core/prov/verbs/verbs_listener.h \
	src/core/prov/verbs/verbs_listener.cc \
	src/core/prov/verbs/verbs_provider.cc \
	src/core/prov/verbs/ud_qp.h \
	src/core/prov/verbs/ud_qp.cc
