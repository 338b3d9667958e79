#include "CHearthKernels.h"
