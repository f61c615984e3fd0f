// Declarations only: libFuzzer's entry points are defined by compiler-rt in the fuzz build.
#include "CFuzzerDriver.h"
