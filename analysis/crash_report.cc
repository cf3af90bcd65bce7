#include "analysis/crash_report.h"
