// Forwarding header: the type is public (include/npuc/dtype.hpp).
#pragma once
#include "npuc/dtype.hpp"
