#include "analysis/analyzer_run.h"
