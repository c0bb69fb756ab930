# Prints on stdout the parts an assignment's manifest disables ("enabled": false), separated by
# spaces (an empty line when none is), or one line "error: <why>" when the manifest cannot be
# used. The manifest is the one place an instructor chooses what to assign: the release, the
# Gradescope and Autolab autograders and dtk-grade all follow it. Written in CMake, which every
# kit machine has, so that releasing needs neither a build nor a JSON tool.
#
# usage: cmake -DMANIFEST=FILE -DASSIGNMENT=N -P scripts/disabled-parts.cmake
function(answer text)
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${text}")
endfunction()

if(NOT EXISTS "${MANIFEST}" OR IS_DIRECTORY "${MANIFEST}")
  answer("error: the manifest ${MANIFEST} does not exist")
  return()
endif()
file(READ "${MANIFEST}" json)
string(JSON assignment ERROR_VARIABLE problem GET "${json}" assignment)
if(problem)
  string(REGEX REPLACE "[ \n]+" " " problem "${problem}")  # one line
  answer("error: ${MANIFEST} is not a manifest (${problem})")
  return()
endif()
if(NOT assignment STREQUAL ASSIGNMENT)
  answer("error: ${MANIFEST} is assignment ${assignment}'s manifest, not assignment ${ASSIGNMENT}'s")
  return()
endif()
string(JSON count ERROR_VARIABLE problem LENGTH "${json}" parts)
if(problem OR count EQUAL 0)
  answer("error: ${MANIFEST} lists no parts")
  return()
endif()
set(disabled "")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON part ERROR_VARIABLE problem GET "${json}" parts ${i} part)
  if(problem)
    answer("error: ${MANIFEST}, parts[${i}] has no \"part\" number")
    return()
  endif()
  string(JSON enabled ERROR_VARIABLE problem GET "${json}" parts ${i} enabled)
  if(problem)  # no "enabled" key: enabled
    continue()
  endif()
  if(NOT enabled MATCHES "^(ON|OFF)$")  # string(JSON) gives booleans as ON and OFF
    answer("error: ${MANIFEST}, part ${part}: \"enabled\" must be true or false")
    return()
  endif()
  if(enabled STREQUAL "OFF")
    list(APPEND disabled ${part})
  endif()
endforeach()
list(JOIN disabled " " disabled)
answer("${disabled}")
