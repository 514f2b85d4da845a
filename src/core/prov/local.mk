# Providers: the shared vocabulary, the registry and selection; each
# provider's folder adds its own fragment and registers itself.
libslipstream_core_la_SOURCES += \
	src/core/prov/provider.h \
	src/core/prov/ring.h \
	src/core/prov/steering.h \
	src/core/prov/connection.h \
	src/core/prov/registry.h \
	src/core/prov/registry.cc \
	src/core/prov/selection.h \
	src/core/prov/selection.cc \
	src/core/prov/sock_addr.h \
	src/core/prov/sock_addr.cc \
	src/core/prov/listener_set.h \
	src/core/prov/listener_set.cc \
	src/core/prov/endpoint_registrar.h \
	src/core/prov/endpoint_registrar.cc

include src/core/prov/util/local.mk
include src/core/prov/tcp/local.mk
include src/core/prov/shm/local.mk
include src/core/prov/verbs/local.mk
include src/core/prov/xdp/local.mk

core_unit_tests_SOURCES += \
	tests/core/prov_fixture.h \
	tests/core/prov_caps_test.cc \
	tests/core/prov_endpoint_registrar_test.cc \
	tests/core/prov_listener_set_test.cc \
	tests/core/prov_registry_test.cc \
	tests/core/prov_shm_stream_test.cc \
	tests/core/prov_side_channel_test.cc
