#include "CSystemShims.h"
