#include "analysis/signature.h"
