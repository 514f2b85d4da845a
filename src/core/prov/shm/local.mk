# The shm provider: peers on one host, shared memory found through a rendezvous.
libslipstream_core_la_SOURCES += \
	src/core/prov/shm/ring.h \
	src/core/prov/shm/rendezvous.h \
	src/core/prov/shm/rendezvous.cc \
	src/core/prov/shm/shm_endpoint.h \
	src/core/prov/shm/shm_endpoint.cc \
	src/core/prov/shm/shm_provider.cc
