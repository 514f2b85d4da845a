# src/core/mem: the zero-copy buffer model (regions, chunk memory, pools of
# frames, buffers, registration).
libslipstream_core_la_SOURCES += \
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
	src/core/mem/pool.cc \
	src/core/mem/pool_frames.cc \
	src/core/mem/fork_frames.h \
	src/core/mem/fork_frames.cc

core_unit_tests_SOURCES += \
	tests/core/mem_region_test.cc \
	tests/core/mem_pool_slab_test.cc \
	tests/core/mem_pool_test.cc \
	tests/core/mem_fork_frames_test.cc \
	tests/core/mem_test_pool.h

# The ring-provider interface (prov/ring.h) proven on the buffer model by a
# loopback provider that exists only in the tests.
core_unit_tests_SOURCES += \
	tests/core/loopback_ring.h \
	tests/core/loopback_ring.cc \
	tests/core/prov_ring_loopback_test.cc
