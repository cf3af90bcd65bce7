# coredumpd_room(): one layer of the code base as its own library, whose includes the build checks.
#
#   coredumpd_room(<target> [SOURCES <file>...] [ROOMS <target>...] [LIBS <dependency>...])
#
# Creates <target> from SOURCES (an INTERFACE library when there are none), linked publicly to
# the ROOMS it builds on and to LIBS (third-party). Every source and header in the calling folder
# may include, from this project, only its own folder and the folders of ROOMS: the build runs
# cmake/check_includes.cmake over them before compiling <target> and fails on any other include,
# naming the file, the line and the rooms it may use. The ROOMS' own ROOMS are not implied: a room
# names every room it includes from.
#
# The global property COREDUMPD_ROOMS lists the rooms in the order they were declared (each after
# the rooms it builds on), for tests/fuzz to clone them.

set(COREDUMPD_CHECK_INCLUDES ${CMAKE_CURRENT_LIST_DIR}/check_includes.cmake)

function(coredumpd_room target)
  cmake_parse_arguments(PARSE_ARGV 1 ROOM "" "" "SOURCES;ROOMS;LIBS")
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  if(ROOM_SOURCES)
    add_library(${target} STATIC ${ROOM_SOURCES})
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${target} ${scope} ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} ${scope} ${ROOM_ROOMS} ${ROOM_LIBS})
  set_property(TARGET ${target} PROPERTY COREDUMPD_ROOM_FOLDER ${folder})
  set_property(GLOBAL APPEND PROPERTY COREDUMPD_ROOMS ${target})

  set(allowed ${folder})
  foreach(room IN LISTS ROOM_ROOMS)
    get_target_property(room_folder ${room} COREDUMPD_ROOM_FOLDER)
    if(NOT room_folder)
      message(FATAL_ERROR "coredumpd_room(${target}): ROOMS names ${room}, which is not a room declared before it")
    endif()
    list(APPEND allowed ${room_folder})
  endforeach()
  file(GLOB files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}.includes-checked)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} "-DROOM=${folder}" "-DALLOWED=${allowed}" "-DFILES=${files}"
            "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}" -P ${COREDUMPD_CHECK_INCLUDES}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${files} ${COREDUMPD_CHECK_INCLUDES}
    COMMENT "Checking the includes of ${folder}/ against its rooms"
    VERBATIM)
  add_custom_target(${target}_includes DEPENDS ${stamp})
  add_dependencies(${target} ${target}_includes)
endfunction()
