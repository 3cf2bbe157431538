# Run at every build (cmake -DSOURCE_DIR=... -DOUTPUT=... -P git_commit.cmake):
# writes OUTPUT, a header defining REMAT_GIT_COMMIT, the source tree's
# commit with "-dirty" when tracked files differ. Taken at build time, not
# configure time, so that a results file and the sweep journal's code
# version name the commit the binary was built from after a plain
# `cmake --build` too. OUTPUT is rewritten only when the text changes, so
# an unchanged tree recompiles nothing.
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE commit
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(
  COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE dirty
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
elseif(dirty)
  string(APPEND commit "-dirty")
endif()
set(text "#define REMAT_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
