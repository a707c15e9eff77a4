# Writes OUT (version.cc) from IN with the version string: PROJECT_VERSION, the git commit when
# ROOT is a git checkout, and a hash of the sources that go into the driver and its callers
# (src/, tools/, python/src/), so that any change to them changes the version and so the result
# cache's keys. Run at every build (src/driver/CMakeLists.txt); configure_file rewrites OUT only
# when the string changed, so nothing is recompiled otherwise.
set(commit "")
if(GIT AND EXISTS "${ROOT}/.git")
  execute_process(COMMAND "${GIT}" rev-parse --short=12 HEAD WORKING_DIRECTORY "${ROOT}"
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
file(GLOB_RECURSE sources LIST_DIRECTORIES false
     "${ROOT}/src/*" "${ROOT}/tools/*" "${ROOT}/python/src/*")
list(SORT sources)
set(all "")
foreach(f ${sources})
  file(SHA256 "${f}" h)
  file(RELATIVE_PATH rel "${ROOT}" "${f}")
  string(APPEND all "${rel} ${h}\n")
endforeach()
string(SHA256 tree "${all}")
string(SUBSTRING "${tree}" 0 10 tree)
if(commit)
  set(MUGRAPH_VERSION_STRING "${VERSION}+g${commit}.src${tree}")
else()
  set(MUGRAPH_VERSION_STRING "${VERSION}+src${tree}")
endif()
configure_file("${IN}" "${OUT}" @ONLY)
