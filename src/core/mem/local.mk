# src/core/mem: the zero-copy buffer model (regions, registered slabs, buffers).
libslipstream_la_SOURCES += \
	src/core/mem/region.h \
	src/core/mem/region.cc \
	src/core/mem/region_registry.h \
	src/core/mem/region_registry.cc \
	src/core/mem/registrar.h \
	src/core/mem/descriptor.h \
	src/core/mem/buffer.h \
	src/core/mem/buffer.cc \
	src/core/mem/slab.h \
	src/core/mem/slab.cc

core_unit_tests_SOURCES += \
	tests/core/mem_region_test.cc \
	tests/core/mem_slab_test.cc
