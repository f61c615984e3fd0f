#include "cnetshims.h"
