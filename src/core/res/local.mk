# src/core/res: the verbs resource manager (devices, protection domains, MR
# cache, async events), shared by every face.
libslipstream_core_la_SOURCES += \
	src/core/res/verbs_manager.h \
	src/core/res/verbs_manager.cc \
	src/core/res/mr_cache.h \
	src/core/res/mr_cache.cc \
	src/core/res/pd_registrar.h \
	src/core/res/pd_registrar.cc \
	src/core/res/netdev_map.h \
	src/core/res/netdev_map.cc

core_unit_tests_SOURCES += \
	tests/core/res_mr_cache_test.cc \
	tests/core/res_ud_qp_test.cc
