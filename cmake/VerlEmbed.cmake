# verl_embed_text_file(INPUT OUTPUT SYMBOL): generates OUTPUT (a .cpp) defining
#   extern const char SYMBOL[];  -- the file's bytes, NUL-terminated
# regenerated whenever INPUT changes.
function(verl_embed_text_file input output symbol)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output} -DSYMBOL=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/VerlEmbedScript.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/VerlEmbedScript.cmake
    COMMENT "Embedding ${input}")
endfunction()
