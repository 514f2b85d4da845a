# core/res: the verbs resource manager (devices, protection domains, MR
# cache, async events), shared by every face.
libslipstream_la_SOURCES += \
	core/res/verbs_manager.h \
	core/res/verbs_manager.cc \
	core/res/mr_cache.h \
	core/res/mr_cache.cc \
	core/res/pd_registrar.h \
	core/res/pd_registrar.cc \
	core/res/netdev_map.h \
	core/res/netdev_map.cc

core_unit_tests_SOURCES += \
	tests/core/res_mr_cache_test.cc
