// NotImplemented: what every TODO stub throws until you write its body.
#pragma once

#include <stdexcept>
#include <string>

namespace dtk {

// Thrown by a starter stub. The message names the function and the file that holds its TODO,
// e.g. "NotImplemented: dtk::get_info (your TODO in model/func_impl.cpp)".
class NotImplemented : public std::logic_error {
 public:
  NotImplemented(const std::string& function, const std::string& student_file)
      : std::logic_error("NotImplemented: dtk::" + function + " (your TODO in " + student_file +
                         ")") {}
};

}  // namespace dtk
