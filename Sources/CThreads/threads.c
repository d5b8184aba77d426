#include "CThreads.h"
