// Forwarding header: the type is public (include/npuc/tensor.hpp).
#pragma once
#include "npuc/tensor.hpp"
