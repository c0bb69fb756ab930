// Placeholder: replaced by its issue.
#include "dtk_test.hpp"
