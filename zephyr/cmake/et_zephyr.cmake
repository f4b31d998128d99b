# SPDX-License-Identifier: Apache-2.0
#
# CMake helpers of the et-zephyr module.
#
#   et_zephyr_add_model(<target>
#       PTE <file.pte> | MODEL <file.py:factory>
#       [NAME <name>] [OPS <file.ops.yaml>] [MANIFEST <file.json>] [CONF <file.conf>]
#       [SCHEMAS <file.schemas.yaml>] [EXPORT_ARGS <et-export args>...]
#       [DEPENDS <files the model reads>...])
#
# embeds a model in <target> (normally `app`): the .pte (16-byte aligned, in
# CONFIG_ET_ZEPHYR_MODEL_SECTION, executed in place from flash), its arenas and
# a ready `const struct et_zephyr_config <name>_config` (header <name>_model.h),
# the kernel registration for exactly the operators it calls, those kernels
# (Cortex-M wrappers + CMSIS-NN, portable kernels only for the rest) and the
# kernel registry sized to them.
#
# With PTE, the files et-export wrote beside it (<name>.ops.yaml, <name>.json,
# <name>.conf, <name>.schemas.yaml, <name>.schema/) are used when present; the
# build needs neither torch, executorch nor flatc then. With MODEL, et-export
# runs at CMake time for the CPU and ISA tier of the board (from Kconfig), into
# ${CMAKE_BINARY_DIR}/et/<name>, and again whenever the model file, one of the
# DEPENDS files (weights, calibration data) or EXPORT_ARGS change.

get_filename_component(_et_zephyr_module_dir ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
set(ET_ZEPHYR_MODULE_DIR ${_et_zephyr_module_dir} CACHE INTERNAL "et-zephyr module")
set(ET_ZEPHYR_GEN_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/et_zephyr_gen.py CACHE INTERNAL "generator")
set(ET_ZEPHYR_SRC_ROOT ${CMAKE_BINARY_DIR}/et_zephyr/src CACHE INTERNAL "<executorch/...> root")
set(ET_ZEPHYR_GEN_INCLUDE ${CMAKE_BINARY_DIR}/et_zephyr/include CACHE INTERNAL "generated headers")
set(ET_ZEPHYR_SCHEMAS program scalar_type CACHE INTERNAL "ExecuTorch program schema files")

# ExecuTorch's program schema headers (<executorch/schema/*_generated.h>) from
# et-export's NAME.schema/ folder: no flatc needed.
function(et_zephyr_schema_headers_from dir)
  foreach(_schema ${ET_ZEPHYR_SCHEMAS})
    configure_file(${dir}/${_schema}_generated.h
                   ${ET_ZEPHYR_GEN_INCLUDE}/executorch/schema/${_schema}_generated.h COPYONLY)
  endforeach()
  set_property(GLOBAL PROPERTY ET_ZEPHYR_SCHEMA_HEADERS ${dir})
endfunction()

# Otherwise flatc makes them from the ExecuTorch sources: the one in the
# executorch wheel (24.3.25, the release's own), else ET_ZEPHYR_FLATC or PATH.
function(et_zephyr_schema_headers_fallback)
  get_property(_done GLOBAL PROPERTY ET_ZEPHYR_SCHEMA_HEADERS)
  if(_done)
    return()
  endif()
  if(NOT ET_ZEPHYR_FLATC)
    execute_process(
      COMMAND ${PYTHON_EXECUTABLE} -c
              "import executorch, os; print(os.path.join(list(executorch.__path__)[0], 'data', 'bin', 'flatc'))"
      OUTPUT_VARIABLE _flatc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0 OR NOT EXISTS "${_flatc}")
      find_program(_flatc flatc)
    endif()
    if(NOT _flatc)
      message(FATAL_ERROR "et-zephyr: no ExecuTorch program schema headers: build from a .pte "
                          "with the NAME.schema/ folder et-export writes beside it, or install "
                          "the executorch wheel (it ships flatc), or set ET_ZEPHYR_FLATC")
    endif()
    set(ET_ZEPHYR_FLATC ${_flatc} CACHE FILEPATH "flatc (24.3.25, from the executorch wheel)")
  endif()
  set(_fbs)
  foreach(_schema ${ET_ZEPHYR_SCHEMAS})
    list(APPEND _fbs ${ET_ZEPHYR_EXECUTORCH_DIR}/schema/${_schema}.fbs)
  endforeach()
  # The flags of ExecuTorch's own build (schema/CMakeLists.txt). Generated at
  # configure time, and copied only when changed, so no rebuild follows.
  set(_staging ${CMAKE_BINARY_DIR}/et_zephyr/flatc)
  execute_process(
    COMMAND ${ET_ZEPHYR_FLATC} --cpp --cpp-std c++11 --gen-mutable --scoped-enums -o ${_staging}
            ${_fbs}
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "et-zephyr: ${ET_ZEPHYR_FLATC} failed on ${_fbs}")
  endif()
  et_zephyr_schema_headers_from(${_staging})
  set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_fbs})
  message(STATUS "et-zephyr: program schema headers generated with ${ET_ZEPHYR_FLATC}")
endfunction()

# Where ExecuTorch and CMSIS-NN are. Override with the cache variables
# ET_ZEPHYR_EXECUTORCH_DIR and ET_ZEPHYR_CMSIS_NN_DIR.
function(et_zephyr_locate_sources)
  set(_west_top ${ZEPHYR_BASE}/..)
  if(NOT ET_ZEPHYR_EXECUTORCH_DIR)
    if(ZEPHYR_EXECUTORCH_MODULE_DIR)
      set(_dir ${ZEPHYR_EXECUTORCH_MODULE_DIR})
    else()
      set(_dir ${_west_top}/modules/lib/executorch)
    endif()
    set(ET_ZEPHYR_EXECUTORCH_DIR ${_dir} CACHE PATH "ExecuTorch source tree (v1.4.1)")
  endif()
  if(NOT EXISTS ${ET_ZEPHYR_EXECUTORCH_DIR}/runtime/executor/method.cpp)
    message(FATAL_ERROR "et-zephyr: no ExecuTorch sources at ${ET_ZEPHYR_EXECUTORCH_DIR} "
                        "(west update, or set ET_ZEPHYR_EXECUTORCH_DIR)")
  endif()
  if(NOT ET_ZEPHYR_CMSIS_NN_DIR)
    if(ZEPHYR_CMSIS_NN_MODULE_DIR)
      set(_dir ${ZEPHYR_CMSIS_NN_MODULE_DIR})
    else()
      set(_dir ${_west_top}/modules/lib/cmsis-nn)
    endif()
    set(ET_ZEPHYR_CMSIS_NN_DIR ${_dir} CACHE PATH "CMSIS-NN source tree")
  endif()
  # The program schema and the Python side (et-export) must be the same release.
  if(EXISTS ${ET_ZEPHYR_EXECUTORCH_DIR}/version.txt)
    file(STRINGS ${ET_ZEPHYR_EXECUTORCH_DIR}/version.txt _src_version LIMIT_COUNT 1)
    execute_process(
      COMMAND ${PYTHON_EXECUTABLE} -c "from executorch.version import __version__; print(__version__)"
      OUTPUT_VARIABLE _py_version OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    string(REGEX REPLACE "[+].*$" "" _py_version "${_py_version}")
    if(_rc EQUAL 0 AND NOT _py_version STREQUAL _src_version)
      message(WARNING "et-zephyr: ExecuTorch source ${_src_version} (${ET_ZEPHYR_EXECUTORCH_DIR}) "
                      "differs from the installed executorch package ${_py_version}: programs "
                      "exported with the package may not load")
    endif()
  endif()
  # ExecuTorch's sources include <executorch/...>: expose the tree under that name.
  set(_root ${ET_ZEPHYR_SRC_ROOT})
  if(NOT EXISTS ${_root}/executorch)
    file(MAKE_DIRECTORY ${_root})
    file(CREATE_LINK ${ET_ZEPHYR_EXECUTORCH_DIR} ${_root}/executorch SYMBOLIC)
  endif()
  message(STATUS "et-zephyr: ExecuTorch ${ET_ZEPHYR_EXECUTORCH_DIR}, CMSIS-NN "
                 "${ET_ZEPHYR_CMSIS_NN_DIR}")
endfunction()

# Include paths, definitions and warning exceptions for code using ExecuTorch.
# ExecuTorch and CMSIS-NN are third-party code: their warnings are silenced
# here, on these targets only, so that the application still builds with
# CONFIG_COMPILER_WARNINGS_AS_ERRORS (twister).
# OWN: the target's sources are et-zephyr's own (warnings stay on).
function(et_zephyr_executorch_flags target)
  cmake_parse_arguments(ARG "OWN" "" "" ${ARGN})
  set(_et ${ET_ZEPHYR_EXECUTORCH_DIR})
  target_include_directories(
    ${target} SYSTEM PRIVATE ${ET_ZEPHYR_SRC_ROOT} ${ET_ZEPHYR_GEN_INCLUDE}
    ${_et}/runtime/core/portable_type/c10 ${_et}/third-party/flatbuffers/include)
  if(CONFIG_ET_ZEPHYR_RUNTIME_LOG)
    set(_log 1)
  else()
    set(_log 0)
  endif()
  if(CONFIG_ET_ZEPHYR_VERIFY_PROGRAM)
    set(_verify 1)
  else()
    set(_verify 0)
  endif()
  if(NOT ARG_OWN)
    # Release build of third-party code: drops assert() (and the fprintf it pulls in)
    # from flatbuffers and ExecuTorch's debug-only checks; ET_CHECK stays.
    target_compile_definitions(${target} PRIVATE NDEBUG)
  endif()
  target_compile_definitions(
    ${target} PRIVATE C10_USING_CUSTOM_GENERATED_MACROS ET_LOG_ENABLED=${_log}
                      ET_ENABLE_PROGRAM_VERIFICATION=${_verify} FLATBUFFERS_MAX_ALIGNMENT=1024)
  if(CONFIG_ET_ZEPHYR_PROFILING)
    target_compile_definitions(${target} PRIVATE ET_EVENT_TRACER_ENABLED)
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
  if(ARG_OWN)
    return()
  endif()
  # As source properties: they come after Zephyr's -Wall/-Wformat on the command line.
  get_target_property(_srcs ${target} SOURCES)
  set_property(
    SOURCE ${_srcs} APPEND
    PROPERTY COMPILE_OPTIONS $<$<COMPILE_LANGUAGE:CXX>:-Wno-deprecated-declarations>
             -Wno-unused-parameter -Wno-unused-variable -Wno-unused-function -Wno-sign-compare
             -Wno-missing-field-initializers -Wno-shadow -Wno-double-promotion -Wno-format-security -Wno-format
             -Wno-maybe-uninitialized -Wno-psabi)
endfunction()

# cortex-mXX of the board's CPU, from Kconfig.
function(et_zephyr_cpu out_var)
  foreach(_cpu m0plus m0 m3 m4 m7 m23 m33 m52 m55 m85)
    string(TOUPPER ${_cpu} _upper)
    if(CONFIG_CPU_CORTEX_${_upper})
      set(${out_var} cortex-${_cpu} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "et-zephyr: the board's CPU is not a Cortex-M et-zephyr knows")
endfunction()

# Compile options that hold CMSIS-NN to the Kconfig ISA tier on a core that has more.
function(et_zephyr_isa_options out_var)
  set(_opts)
  if(CONFIG_ET_ZEPHYR_ISA_SCALAR)
    list(APPEND _opts -U__ARM_FEATURE_DSP -U__ARM_FEATURE_MVE)
  elseif(CONFIG_ET_ZEPHYR_ISA_DSP)
    list(APPEND _opts -U__ARM_FEATURE_MVE)
  endif()
  set(${out_var} ${_opts} PARENT_SCOPE)
endfunction()

# Appends the board's flash and RAM from its devicetree (the code partition when the
# image goes there; the flash only when the image runs in place) for the generator's
# fit check, which stops the configure step when the model cannot fit.
function(et_zephyr_board_memory_args list_var)
  set(_args --board ${BOARD}${BOARD_QUALIFIERS})
  if(CONFIG_XIP)
    if(CONFIG_USE_DT_CODE_PARTITION)
      dt_chosen(_flash PROPERTY "zephyr,code-partition")
    else()
      dt_chosen(_flash PROPERTY "zephyr,flash")
    endif()
    if(_flash)
      dt_reg_size(_flash_size PATH ${_flash})
      if(NOT _flash_size OR _flash_size STREQUAL "NONE")  # a reg with no size cells
        set(_flash_size)
        # A serial NOR flash (jedec,spi-nor and its kin) gives its capacity in bits.
        dt_prop(_flash_bits PATH ${_flash} PROPERTY size)
        if(_flash_bits)
          math(EXPR _flash_size "${_flash_bits} / 8")
        endif()
      endif()
      if(CONFIG_FLASH_LOAD_SIZE)
        math(EXPR _load_size "${CONFIG_FLASH_LOAD_SIZE}")  # Kconfig gives hex
        if(_load_size GREATER 0)
          set(_flash_size ${_load_size})
        endif()
      endif()
      if(_flash_size)
        list(APPEND _args "--board-flash=${_flash}:${_flash_size}")
      endif()
    endif()
  endif()
  dt_chosen(_sram PROPERTY "zephyr,sram")
  if(_sram)
    dt_reg_size(_sram_size PATH ${_sram})
    if(_sram_size AND NOT _sram_size STREQUAL "NONE")
      list(APPEND _args "--board-ram=${_sram}:${_sram_size}")
    endif()
  endif()
  set(${list_var} ${${list_var}} ${_args} PARENT_SCOPE)
endfunction()

# Appends --region=ARENA=SECTION:SIZE to <list_var> when the arena's Kconfig symbol
# (CONFIG_ET_ZEPHYR_PLANNED_REGION_1/_2, _METHOD_ARENA_REGION, _TEMP_ARENA_REGION) names the
# node label of a "zephyr,memory-region" devicetree node. Arenas in the chosen zephyr,sram
# stay in .bss, the default RAM (its region is the RAM the linker already fills).
function(et_zephyr_region_arg arena list_var)
  set(_symbols planned1 PLANNED_REGION_1 planned2 PLANNED_REGION_2 method METHOD_ARENA_REGION
               temp TEMP_ARENA_REGION)
  list(FIND _symbols ${arena} _index)
  math(EXPR _index "${_index} + 1")
  list(GET _symbols ${_index} _symbol)
  set(_label "${CONFIG_ET_ZEPHYR_${_symbol}}")
  set(_option --region)
  if(_label STREQUAL "")
    # With a DTCM apart from the main RAM, every arena but --fast-arena's second buffer
    # (the rest, meant for the large RAM) goes there where they fit it
    # (CONFIG_ET_ZEPHYR_ARENAS_IN_DTCM; the generator checks the fit).
    if(NOT CONFIG_ET_ZEPHYR_ARENAS_IN_DTCM OR arena STREQUAL "planned2")
      return()
    endif()
    dt_chosen(_node PROPERTY "zephyr,dtcm")
    set(_label "(the chosen zephyr,dtcm)")
    set(_option --default-region)
  else()
    dt_nodelabel(_node NODELABEL ${_label})
  endif()
  if(NOT _node)
    message(FATAL_ERROR "et-zephyr: CONFIG_ET_ZEPHYR_${_symbol}=\"${_label}\": no devicetree "
                        "node has that label")
  endif()
  dt_chosen(_sram PROPERTY "zephyr,sram")
  if(_node STREQUAL _sram)
    return()
  endif()
  dt_prop(_region PATH ${_node} PROPERTY "zephyr,memory-region")
  dt_reg_size(_size PATH ${_node})
  if(NOT _region OR NOT _size)
    message(FATAL_ERROR "et-zephyr: CONFIG_ET_ZEPHYR_${_symbol}=\"${_label}\": ${_node} is not "
                        "a \"zephyr,memory-region\" node with a size")
  endif()
  set(${list_var} ${${list_var}} "${_option}=${arena}=${_region}:${_size}" PARENT_SCOPE)
endfunction()

# In et_zephyr_add_model: lib/src/kernels/<source> as the kernel of cortex_m::<op>.out,
# its function et_zephyr::native::<op>_out (et_zephyr_gen.py --kernel-override).
macro(_et_zephyr_own_kernel op source)
  list(APPEND _own_kernels ${_kernels_dir}/${source})
  list(APPEND _gen_args --kernel-override cortex_m::${op}.out et_zephyr::native::${op}_out
       ${_kernels_dir}/${source})
endmacro()

# In et_zephyr_add_model: lib/src/kernels/<sources> the own kernels call (shared C++ and
# assembly loops), built beside them; the C++ ones compiled as the own kernels are.
macro(_et_zephyr_kernel_support)
  foreach(_source ${ARGN})
    list(APPEND _own_kernel_support ${_kernels_dir}/${_source})
    if(_source MATCHES "\\.cpp$")
      list(APPEND _own_kernels ${_kernels_dir}/${_source})
    endif()
  endforeach()
endmacro()

function(et_zephyr_add_model target)
  cmake_parse_arguments(ARG "" "PTE;MODEL;NAME;OPS;MANIFEST;CONF;SCHEMAS" "EXPORT_ARGS;DEPENDS"
                        ${ARGN})
  get_property(_done GLOBAL PROPERTY ET_ZEPHYR_MODEL_ADDED)
  if(_done)
    message(FATAL_ERROR "et-zephyr: et_zephyr_add_model() supports one model per firmware")
  endif()
  set_property(GLOBAL PROPERTY ET_ZEPHYR_MODEL_ADDED TRUE)
  if((ARG_PTE AND ARG_MODEL) OR (NOT ARG_PTE AND NOT ARG_MODEL))
    message(FATAL_ERROR "et_zephyr_add_model(${target}): give exactly one of PTE or MODEL")
  endif()

  et_zephyr_cpu(_cpu)
  set(_isa ${CONFIG_ET_ZEPHYR_ISA})

  if(ARG_MODEL)
    string(REGEX REPLACE ":[^:/]*$" "" _model_file "${ARG_MODEL}")
    get_filename_component(_model_file ${_model_file} ABSOLUTE)
    if(NOT EXISTS ${_model_file})
      message(FATAL_ERROR "et_zephyr_add_model(${target}): no model file ${_model_file}")
    endif()
    if(NOT ARG_NAME)
      get_filename_component(ARG_NAME ${_model_file} NAME_WE)
    endif()
    set(_export_dir ${CMAKE_BINARY_DIR}/et/${ARG_NAME})
    set(_pte ${_export_dir}/${ARG_NAME}.pte)
    string(REGEX MATCH ":[^:/]*$" _factory "${ARG_MODEL}")
    set(_model_arg "${_model_file}${_factory}")
    set(_stamp ${_export_dir}/.et_zephyr_export_args)
    # Scratch sized for the module's own kernels only where the firmware builds both.
    set(_kernels cmsis-nn)
    if(CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_MVE AND CONFIG_ET_ZEPHYR_CONV_MVE)
      set(_kernels et-zephyr)
    endif()
    set(_args "${_model_arg};--target;${_cpu};--isa;${_isa};--kernels;${_kernels};${ARG_EXPORT_ARGS}")
    set(_old_args "")
    if(EXISTS ${_stamp})
      file(READ ${_stamp} _old_args)
    endif()
    set(_model_inputs ${_model_file})
    foreach(_file ${ARG_DEPENDS})
      get_filename_component(_file ${_file} ABSOLUTE)
      if(NOT EXISTS ${_file})
        message(FATAL_ERROR "et_zephyr_add_model(${target}): no DEPENDS file ${_file}")
      endif()
      list(APPEND _model_inputs ${_file})
    endforeach()
    set(_stale FALSE)  # IS_NEWER_THAN is also true when the .pte does not exist
    foreach(_file ${_model_inputs})
      if(${_file} IS_NEWER_THAN ${_pte})
        set(_stale TRUE)
      endif()
    endforeach()
    if(_stale OR NOT _old_args STREQUAL _args)
      message(STATUS "et-zephyr: et-export ${ARG_MODEL} --target ${_cpu} --isa ${_isa}")
      execute_process(
        COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${ET_ZEPHYR_MODULE_DIR}/scripts"
                ${PYTHON_EXECUTABLE} -c "import sys; from et_zephyr.cli import main; sys.exit(main())"
                ${_args} -o ${_export_dir} --name ${ARG_NAME}
        RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "et-zephyr: et-export failed for ${ARG_MODEL}")
      endif()
      file(WRITE ${_stamp} "${_args}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_model_inputs})
  else()
    get_filename_component(_pte ${ARG_PTE} ABSOLUTE)
    if(NOT EXISTS ${_pte})
      message(FATAL_ERROR "et_zephyr_add_model(${target}): no file ${_pte}")
    endif()
    if(NOT ARG_NAME)
      get_filename_component(ARG_NAME ${_pte} NAME_WE)
    endif()
  endif()
  if(NOT ARG_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "et_zephyr_add_model(${target}): NAME '${ARG_NAME}' must be a C identifier")
  endif()

  # Files et-export writes beside the .pte, unless given explicitly.
  get_filename_component(_dir ${_pte} DIRECTORY)
  get_filename_component(_stem ${_pte} NAME_WE)
  foreach(_kind OPS:ops.yaml MANIFEST:json CONF:conf SCHEMAS:schemas.yaml)
    string(REPLACE ":" ";" _kv ${_kind})
    list(GET _kv 0 _key)
    list(GET _kv 1 _ext)
    if(ARG_${_key})
      get_filename_component(ARG_${_key} ${ARG_${_key}} ABSOLUTE)
    elseif(EXISTS ${_dir}/${_stem}.${_ext})
      set(ARG_${_key} ${_dir}/${_stem}.${_ext})
    endif()
  endforeach()

  if(EXISTS ${_dir}/${_stem}.schema/program_generated.h)
    et_zephyr_schema_headers_from(${_dir}/${_stem}.schema)
  endif()

  set(_out ${CMAKE_BINARY_DIR}/et_zephyr/model/${ARG_NAME})
  set(_gen_args --pte ${_pte} --name ${ARG_NAME} --executorch-dir ${ET_ZEPHYR_EXECUTORCH_DIR}
                --out-dir ${_out} --isa ${_isa} --cpu ${_cpu})
  set(_inputs ${_pte} ${ET_ZEPHYR_GEN_SCRIPT})
  foreach(_key OPS MANIFEST CONF SCHEMAS)
    if(ARG_${_key})
      string(TOLOWER ${_key} _opt)
      if(_key STREQUAL "OPS")
        set(_opt ops-yaml)
      endif()
      list(APPEND _gen_args --${_opt} ${ARG_${_key}})
      list(APPEND _inputs ${ARG_${_key}})
    endif()
  endforeach()
  foreach(_flag CORTEX_M_KERNELS:cortex-m PORTABLE_KERNELS:portable PROFILING:profiling
                VERIFY_PROGRAM:verify KERNEL_FALLBACKS:keep-fallbacks)
    string(REPLACE ":" ";" _kv ${_flag})
    list(GET _kv 0 _sym)
    list(GET _kv 1 _opt)
    if(CONFIG_ET_ZEPHYR_${_sym})
      list(APPEND _gen_args --${_opt} 1)
    else()
      list(APPEND _gen_args --${_opt} 0)
    endif()
  endforeach()
  if(NOT CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR STREQUAL "")
    message(WARNING "et-zephyr: test build: ${CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR} call "
                    "${CONFIG_ET_ZEPHYR_TEST_FAULT_CALL} is perturbed (CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR)")
    list(APPEND _gen_args --fault-operator ${CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR} --fault-call
         ${CONFIG_ET_ZEPHYR_TEST_FAULT_CALL})
  endif()
  set(_kernels_dir ${ET_ZEPHYR_MODULE_DIR}/lib/src/kernels)
  set(_own_kernels)
  # What kernels call, not kernels of their own: shared code and assembly loops.
  set(_own_kernel_support)
  if(CONFIG_ET_ZEPHYR_CONV_MVE OR CONFIG_ET_ZEPHYR_LINEAR_MVE)
    _et_zephyr_kernel_support(pointwise_mve.cpp pointwise_pair_mve.S)
  endif()
  if(CONFIG_ET_ZEPHYR_CONV_MVE)
    _et_zephyr_own_kernel(quantized_conv2d conv_mve.cpp)
    _et_zephyr_kernel_support(conv_patches_mve.cpp)
    list(APPEND _gen_args --scratch-kernel conv_mve)
  endif()
  if(CONFIG_ET_ZEPHYR_LINEAR_MVE)
    _et_zephyr_own_kernel(quantized_linear linear_mve.cpp)
  endif()
  if(CONFIG_ET_ZEPHYR_ADD_MVE)
    _et_zephyr_own_kernel(quantized_add add_mve.cpp)
  endif()
  if(CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_MVE)
    _et_zephyr_own_kernel(quantized_depthwise_conv2d depthwise_conv_mve.cpp)
    _et_zephyr_kernel_support(depthwise_mve.cpp depthwise_column_mve.S)
    list(APPEND _gen_args --scratch-kernel depthwise_conv_mve)
  endif()
  if(CONFIG_ET_ZEPHYR_RECURRENT_MVE)
    _et_zephyr_kernel_support(activation_s16_mve.cpp)
  endif()
  if(CONFIG_ET_ZEPHYR_CONV_DSP)
    _et_zephyr_own_kernel(quantized_conv2d conv_dsp.cpp)
    _et_zephyr_kernel_support(conv_sums_dsp.S)
  endif()
  if(CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_DSP)
    _et_zephyr_own_kernel(quantized_depthwise_conv2d depthwise_conv_dsp.cpp)
    _et_zephyr_kernel_support(depthwise_sums_dsp.S)
  endif()
  if(CONFIG_ET_ZEPHYR_LINEAR_DSP)
    _et_zephyr_own_kernel(quantized_linear linear_dsp.cpp)
    _et_zephyr_kernel_support(linear_sums_dsp.S)
  endif()
  if(CONFIG_ET_ZEPHYR_CONV_SCALAR OR CONFIG_ET_ZEPHYR_LINEAR_SCALAR)
    _et_zephyr_kernel_support(rows_times_weights_scalar.cpp linear_sums_scalar.S)
  endif()
  if(CONFIG_ET_ZEPHYR_CONV_SCALAR)
    _et_zephyr_own_kernel(quantized_conv2d conv_scalar.cpp)
  endif()
  if(CONFIG_ET_ZEPHYR_LINEAR_SCALAR)
    _et_zephyr_own_kernel(quantized_linear linear_scalar.cpp)
  endif()
  # The recurrent kernels' gate products (gate_products.h) on the linear loops.
  if(CONFIG_ET_ZEPHYR_LINEAR_DSP OR CONFIG_ET_ZEPHYR_LINEAR_SCALAR)
    _et_zephyr_kernel_support(gate_sides.cpp)
  endif()
  if(CONFIG_ET_ZEPHYR_SOFTMAX_TABLE)
    _et_zephyr_own_kernel(softmax softmax_table.cpp)
  endif()
  foreach(_arena planned1 planned2 method temp)
    et_zephyr_region_arg(${_arena} _gen_args)
  endforeach()
  et_zephyr_board_memory_args(_gen_args)
  list(APPEND _gen_args
       "--model-section=${CONFIG_ET_ZEPHYR_MODEL_SECTION}"
       "--arena-section=${CONFIG_ET_ZEPHYR_ARENA_SECTION}"
       --planned-arena ${CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE}
       --method-arena ${CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE}
       --temp-arena ${CONFIG_ET_ZEPHYR_TEMP_ARENA_SIZE}
       --kernel-slots ${CONFIG_ET_ZEPHYR_KERNEL_SLOTS})
  execute_process(COMMAND ${PYTHON_EXECUTABLE} ${ET_ZEPHYR_GEN_SCRIPT} ${_gen_args}
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "et-zephyr: cannot build model ${ARG_NAME} (see above)")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_inputs})
  include(${_out}/et_zephyr_sources.cmake)
  if(ET_ZEPHYR_SOURCES_WITHOUT_FALLBACK)
    set_property(SOURCE ${ET_ZEPHYR_SOURCES_WITHOUT_FALLBACK} APPEND
                 PROPERTY COMPILE_DEFINITIONS ET_ZEPHYR_UPSTREAM_FALLBACK=0)
  endif()

  # Model, registration and kernels: an object library whose objects land in
  # <target>; the linker's section GC drops what the model does not reach.
  set(_lib et_zephyr_model_${ARG_NAME})
  add_library(${_lib} OBJECT
    ${_out}/${ARG_NAME}_model.c ${_out}/${ARG_NAME}_pte.S ${_out}/et_zephyr_registration.cpp
    ${ET_ZEPHYR_EXECUTORCH_DIR}/runtime/kernel/operator_registry.cpp
    ${ET_ZEPHYR_CORTEX_M_SOURCES} ${ET_ZEPHYR_PORTABLE_SOURCES} ${ET_ZEPHYR_PRIM_SOURCES}
    ${_own_kernel_support})
  target_link_libraries(${_lib} PRIVATE zephyr_interface)
  et_zephyr_executorch_flags(${_lib})
  target_include_directories(${_lib} PRIVATE ${ET_ZEPHYR_MODULE_DIR}/lib/include ${_out})
  set_source_files_properties(${_out}/${ARG_NAME}_pte.S PROPERTIES OBJECT_DEPENDS ${_pte})
  set_property(SOURCE ${ET_ZEPHYR_EXECUTORCH_DIR}/runtime/kernel/operator_registry.cpp APPEND
               PROPERTY COMPILE_OPTIONS -include ${_out}/et_zephyr_kernel_slots.h)
  set_property(SOURCE ${ET_ZEPHYR_EXECUTORCH_DIR}/runtime/kernel/operator_registry.cpp APPEND
               PROPERTY OBJECT_DEPENDS ${_out}/et_zephyr_kernel_slots.h)
  target_include_directories(${target} PRIVATE ${_out})
  target_link_libraries(${target} PRIVATE ${_lib})

  if(ET_ZEPHYR_CORTEX_M_SOURCES)
    if(NOT EXISTS ${ET_ZEPHYR_CMSIS_NN_DIR}/Include/arm_nnfunctions.h)
      message(FATAL_ERROR "et-zephyr: no CMSIS-NN at ${ET_ZEPHYR_CMSIS_NN_DIR} (west update, "
                          "or set ET_ZEPHYR_CMSIS_NN_DIR)")
    endif()
    et_zephyr_isa_options(_isa_opts)
    file(GLOB_RECURSE _nn_srcs ${ET_ZEPHYR_CMSIS_NN_DIR}/Source/*.c)
    list(FILTER _nn_srcs EXCLUDE REGEX "/Source/Bindings/|_f16\\.c$|_f32\\.c$")
    add_library(et_zephyr_cmsis_nn OBJECT ${_nn_srcs})
    target_link_libraries(et_zephyr_cmsis_nn PRIVATE zephyr_interface)
    target_include_directories(et_zephyr_cmsis_nn PUBLIC ${ET_ZEPHYR_CMSIS_NN_DIR}/Include)
    target_compile_definitions(et_zephyr_cmsis_nn PUBLIC ARM_NN_ENABLE_F32=0 ARM_NN_ENABLE_F16=0
                                                        PRIVATE NDEBUG)
    target_compile_options(et_zephyr_cmsis_nn PRIVATE ${_isa_opts})
    set_property(SOURCE ${_nn_srcs} APPEND PROPERTY COMPILE_OPTIONS -Wno-unused-parameter
                 -Wno-sign-compare -Wno-double-promotion -Wno-maybe-uninitialized -Wno-psabi)
    if(CONFIG_ET_ZEPHYR_KERNELS_FOR_SPEED)
      # A source option comes after Zephyr's -Os, so it wins.
      set_property(SOURCE ${_nn_srcs} APPEND PROPERTY COMPILE_OPTIONS -O3)
      # Their inner loops are assembly: -O3 would add 1.3 KB for 0.4 % fewer instructions.
      set_property(SOURCE ${_own_kernels} APPEND PROPERTY COMPILE_OPTIONS -O2)
    endif()
    target_include_directories(${_lib} PRIVATE ${ET_ZEPHYR_CMSIS_NN_DIR}/Include)
    target_compile_definitions(${_lib} PRIVATE ARM_NN_ENABLE_F32=0 ARM_NN_ENABLE_F16=0)
    set_property(SOURCE ${ET_ZEPHYR_CORTEX_M_SOURCES} ${_own_kernel_support} APPEND
                 PROPERTY COMPILE_OPTIONS ${_isa_opts})
    target_link_libraries(${target} PRIVATE et_zephyr_cmsis_nn)
  endif()
  message(STATUS "et-zephyr: model ${ARG_NAME} (${_cpu}, ISA ${_isa}): ${ET_ZEPHYR_KERNEL_COUNT} "
                 "kernel(s)")
endfunction()
