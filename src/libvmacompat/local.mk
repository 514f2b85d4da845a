# libvmacompat: the VMA-compatible face (libvma.conf, VMA_* settings, the
# Extra API, vma_stats), a library of its own over libslipstream. Each part
# adds its sources below; the preload (libvma.so) will link it.
lib_LTLIBRARIES += libvmacompat.la
libvmacompat_la_SOURCES =
# libvma.conf and the VMA_* settings.
libvmacompat_la_SOURCES += \
	src/libvmacompat/conf_file.cc \
	src/libvmacompat/conf_file.h \
	src/libvmacompat/rules.h \
	src/libvmacompat/rules_match.cc \
	src/libvmacompat/rules_parse.cc \
	src/libvmacompat/settings.cc \
	src/libvmacompat/settings.h \
	src/libvmacompat/settings_choices.h \
	src/libvmacompat/settings_spec.cc
# Never built: makes libtool link the library as C++.
nodist_EXTRA_libvmacompat_la_SOURCES = dummy.cc
libvmacompat_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
libvmacompat_la_LIBADD = libslipstream.la $(PTHREAD_LIBS)
libvmacompat_la_LDFLAGS = -version-info 0:0:0 $(AM_LDFLAGS)
