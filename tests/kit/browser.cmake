# What the grader shows people, in a real browser (Debian's chromium, headless and offline): the
# summary page of a graded class (histograms, failed tests, similar pairs and their side-by-side
# pages; nothing executed or fetched; readable at 1280 and 375 px), each student's feedback as
# Gradescope shows it, and the handout's figures. Its screenshots stay in
# <build>/tests/kit/browser/ for a person to look at.
add_test(NAME kit_browser
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/browser/check_in_browser.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:dtk-grade> ${CMAKE_CURRENT_BINARY_DIR}/browser)
set_tests_properties(kit_browser PROPERTIES TIMEOUT 900 LABELS class-scale)
dtk_whole_machine(kit_browser)
