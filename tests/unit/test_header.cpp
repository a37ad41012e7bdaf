// profile2.h from C++11: the C test compiled as C++ (see test_header.c).
#include "test_header.c"
