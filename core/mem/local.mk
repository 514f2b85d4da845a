# core/mem: the zero-copy buffer model (regions, registered slabs, buffers).
libslipstream_la_SOURCES += \
	core/mem/region.h \
	core/mem/region.cc \
	core/mem/region_registry.h \
	core/mem/region_registry.cc \
	core/mem/registrar.h \
	core/mem/descriptor.h \
	core/mem/buffer.h \
	core/mem/buffer.cc \
	core/mem/slab.h \
	core/mem/slab.cc

core_unit_tests_SOURCES += \
	tests/core/mem_region_test.cc \
	tests/core/mem_slab_test.cc
