# src/core/mem: the zero-copy buffer model (regions, chunk memory, pools of
# frames, buffers, registration).
libslipstream_la_SOURCES += \
	src/core/mem/region.h \
	src/core/mem/region.cc \
	src/core/mem/region_registry.h \
	src/core/mem/region_registry.cc \
	src/core/mem/chunk_memory.h \
	src/core/mem/chunk_memory.cc \
	src/core/mem/registrar.h \
	src/core/mem/descriptor.h \
	src/core/mem/buffer.h \
	src/core/mem/buffer.cc \
	src/core/mem/thread_slots.h \
	src/core/mem/thread_slots.cc \
	src/core/mem/pool.h \
	src/core/mem/pool.cc

core_unit_tests_SOURCES += \
	tests/core/mem_region_test.cc \
	tests/core/mem_pool_slab_test.cc \
	tests/core/mem_pool_test.cc \
	tests/core/mem_test_pool.h
