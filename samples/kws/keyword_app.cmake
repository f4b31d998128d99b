# SPDX-License-Identifier: Apache-2.0
#
# The keyword-spotting firmware shared by samples/kws and samples/kwt:
#
#   keyword_app(NAME <name> FACTORY <factory> WEIGHTS <file>)
#
# embeds <caller>/model.py:<factory>, exported by et-export at build time for the
# board's CPU (again when model.py, its weights or its calibration data change), with
# the activations of MAC layers 0, 4 and 8 as extra outputs 1..3 (a wrong kernel
# shows in the bytes even where the final scores barely move), and builds this
# folder's src/main.c over et-export's test vectors and, with CONFIG_APP_TEST_CLIPS,
# the labelled test clips train.py wrote beside model.py.

set(_keyword_app_dir ${CMAKE_CURRENT_LIST_DIR})

function(keyword_app)
  cmake_parse_arguments(ARG "" "NAME;FACTORY;WEIGHTS" "" ${ARGN})
  set(_sample ${CMAKE_CURRENT_SOURCE_DIR})
  et_zephyr_add_model(app MODEL ${_sample}/model.py:${ARG_FACTORY} NAME ${ARG_NAME}
                      EXPORT_ARGS --expose-activations 0,4,8 --vectors 5
                      DEPENDS ${_sample}/${ARG_WEIGHTS} ${_sample}/calibration.npz)

  set(_vectors ${CMAKE_BINARY_DIR}/et/${ARG_NAME}/${ARG_NAME}.vectors.npz)
  set(_header ${CMAKE_BINARY_DIR}/vectors/vectors.h)
  set(_clips ${_sample}/test_clips.npz)
  set(_clips_arg)
  if(CONFIG_APP_TEST_CLIPS AND EXISTS ${_clips})
    set(_clips_arg --clips ${_clips})
  else()
    set(_clips)
  endif()
  add_custom_command(
    OUTPUT ${_header}
    COMMAND ${PYTHON_EXECUTABLE} ${_keyword_app_dir}/gen_vectors.py --vectors ${_vectors}
            --labels ${_sample}/model.py --out ${_header} ${_clips_arg}
    DEPENDS ${_vectors} ${_keyword_app_dir}/gen_vectors.py ${_sample}/model.py ${_clips}
    COMMENT "Generating test vectors header from ${_vectors}")

  target_sources(app PRIVATE ${_keyword_app_dir}/src/main.c ${_header})
  target_include_directories(app PRIVATE ${CMAKE_BINARY_DIR}/vectors ${_keyword_app_dir}/src)
  target_compile_definitions(app PRIVATE APP_MODEL_HEADER="${ARG_NAME}_model.h"
                                         APP_MODEL_CONFIG=${ARG_NAME}_config)
endfunction()
