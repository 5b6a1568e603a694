# ccache when present. The sloppiness settings let ccache cache files built with a precompiled header.
if(VERL_USE_CCACHE)
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER
        ${CMAKE_COMMAND} -E env "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        ${CCACHE_PROGRAM})
    message(STATUS "verl: using ccache at ${CCACHE_PROGRAM}")
  endif()
endif()
