module @topos {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4x12xf32>, %arg3: tensor<12xf32>, %arg4: tensor<4x4xf32>, %arg5: tensor<4xf32>, %arg6: tensor<4xf32>, %arg7: tensor<4xf32>, %arg8: tensor<4x8xf32>, %arg9: tensor<8xf32>, %arg10: tensor<8x4xf32>, %arg11: tensor<4xf32>, %arg12: tensor<1x3x4xf32>, %arg13: tensor<1x3x4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4x12xf32>, tensor<12xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>) {
    %v14 = stablehlo.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
    %v15_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v15 = stablehlo.reduce(%arg12 init: %v15_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v16_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v16 = stablehlo.broadcast_in_dim %v16_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v17 = stablehlo.divide %v15, %v16 : tensor<1x3xf32>
    %v18 = stablehlo.broadcast_in_dim %v17, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v19 = stablehlo.subtract %arg12, %v18 : tensor<1x3x4xf32>
    %v20 = stablehlo.multiply %v19, %v19 : tensor<1x3x4xf32>
    %v21_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v21 = stablehlo.reduce(%v20 init: %v21_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v22_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v22 = stablehlo.broadcast_in_dim %v22_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v23 = stablehlo.divide %v21, %v22 : tensor<1x3xf32>
    %v24_fill = stablehlo.constant dense<1.0e-05> : tensor<f32>
    %v24 = stablehlo.broadcast_in_dim %v24_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v25 = stablehlo.add %v23, %v24 : tensor<1x3xf32>
    %v26 = stablehlo.sqrt %v25 : tensor<1x3xf32>
    %v27 = stablehlo.broadcast_in_dim %v26, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v28 = stablehlo.divide %v19, %v27 : tensor<1x3x4xf32>
    %v29 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v30 = stablehlo.broadcast_in_dim %v29, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v31 = stablehlo.multiply %v28, %v30 : tensor<1x3x4xf32>
    %v32 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v33 = stablehlo.broadcast_in_dim %v32, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v34 = stablehlo.add %v31, %v33 : tensor<1x3x4xf32>
    %v35 = stablehlo.reshape %v34 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v36 = stablehlo.dot_general %v35, %arg2, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x12xf32>) -> tensor<3x12xf32>
    %v37 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<12xf32>) -> tensor<3x12xf32>
    %v38 = stablehlo.add %v36, %v37 : tensor<3x12xf32>
    %v39 = stablehlo.reshape %v38 : (tensor<3x12xf32>) -> tensor<1x3x12xf32>
    %v40 = stablehlo.slice %v39 [0:1, 0:3, 0:4] : (tensor<1x3x12xf32>) -> tensor<1x3x4xf32>
    %v41 = stablehlo.slice %v39 [0:1, 0:3, 4:8] : (tensor<1x3x12xf32>) -> tensor<1x3x4xf32>
    %v42 = stablehlo.slice %v39 [0:1, 0:3, 8:12] : (tensor<1x3x12xf32>) -> tensor<1x3x4xf32>
    %v43 = stablehlo.reshape %v40 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v44 = stablehlo.transpose %v43, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v45 = stablehlo.reshape %v41 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v46 = stablehlo.transpose %v45, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v47 = stablehlo.reshape %v42 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v48 = stablehlo.transpose %v47, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v49 = stablehlo.transpose %v46, dims = [0, 1, 3, 2] : (tensor<1x2x3x2xf32>) -> tensor<1x2x2x3xf32>
    %v50 = stablehlo.dot_general %v44, %v49, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v51_fill = stablehlo.constant dense<0.70710677> : tensor<f32>
    %v51 = stablehlo.broadcast_in_dim %v51_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v52 = stablehlo.multiply %v50, %v51 : tensor<1x2x3x3xf32>
    %v53 = stablehlo.broadcast_in_dim %v14, dims = [1, 2] : (tensor<3x3xf32>) -> tensor<2x3x3xf32>
    %v54 = stablehlo.broadcast_in_dim %v53, dims = [1, 2, 3] : (tensor<2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %v55 = stablehlo.add %v52, %v54 : tensor<1x2x3x3xf32>
    %v56_peak_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %v56_peak = stablehlo.reduce(%v55 init: %v56_peak_init) applies stablehlo.maximum across dimensions = [3] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %v56_peak_spread = stablehlo.broadcast_in_dim %v56_peak, dims = [0, 1, 2] : (tensor<1x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v56_centred = stablehlo.subtract %v55, %v56_peak_spread : tensor<1x2x3x3xf32>
    %v56_exp = stablehlo.exponential %v56_centred : tensor<1x2x3x3xf32>
    %v56_total_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v56_total = stablehlo.reduce(%v56_exp init: %v56_total_init) applies stablehlo.add across dimensions = [3] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %v56_log = stablehlo.log %v56_total : tensor<1x2x3xf32>
    %v56_log_spread = stablehlo.broadcast_in_dim %v56_log, dims = [0, 1, 2] : (tensor<1x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v56 = stablehlo.subtract %v56_centred, %v56_log_spread : tensor<1x2x3x3xf32>
    %v57 = stablehlo.exponential %v56 : tensor<1x2x3x3xf32>
    %v58 = stablehlo.dot_general %v57, %v48, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
    %v59 = stablehlo.transpose %v58, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v60 = stablehlo.reshape %v59 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v61 = stablehlo.reshape %v60 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v62 = stablehlo.dot_general %v61, %arg4, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v63 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %v64 = stablehlo.add %v62, %v63 : tensor<3x4xf32>
    %v65 = stablehlo.reshape %v64 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v66 = stablehlo.add %arg12, %v65 : tensor<1x3x4xf32>
    %v67_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v67 = stablehlo.reduce(%v66 init: %v67_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v68_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v68 = stablehlo.broadcast_in_dim %v68_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v69 = stablehlo.divide %v67, %v68 : tensor<1x3xf32>
    %v70 = stablehlo.broadcast_in_dim %v69, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v71 = stablehlo.subtract %v66, %v70 : tensor<1x3x4xf32>
    %v72 = stablehlo.multiply %v71, %v71 : tensor<1x3x4xf32>
    %v73_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v73 = stablehlo.reduce(%v72 init: %v73_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v74_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v74 = stablehlo.broadcast_in_dim %v74_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v75 = stablehlo.divide %v73, %v74 : tensor<1x3xf32>
    %v76_fill = stablehlo.constant dense<1.0e-05> : tensor<f32>
    %v76 = stablehlo.broadcast_in_dim %v76_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v77 = stablehlo.add %v75, %v76 : tensor<1x3xf32>
    %v78 = stablehlo.sqrt %v77 : tensor<1x3xf32>
    %v79 = stablehlo.broadcast_in_dim %v78, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v80 = stablehlo.divide %v71, %v79 : tensor<1x3x4xf32>
    %v81 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v82 = stablehlo.broadcast_in_dim %v81, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v83 = stablehlo.multiply %v80, %v82 : tensor<1x3x4xf32>
    %v84 = stablehlo.broadcast_in_dim %arg7, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v85 = stablehlo.broadcast_in_dim %v84, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v86 = stablehlo.add %v83, %v85 : tensor<1x3x4xf32>
    %v87 = stablehlo.reshape %v86 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v88 = stablehlo.dot_general %v87, %arg8, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %v89 = stablehlo.broadcast_in_dim %arg9, dims = [1] : (tensor<8xf32>) -> tensor<3x8xf32>
    %v90 = stablehlo.add %v88, %v89 : tensor<3x8xf32>
    %v91 = stablehlo.reshape %v90 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
    %v92 = stablehlo.multiply %v91, %v91 : tensor<1x3x8xf32>
    %v93 = stablehlo.multiply %v92, %v91 : tensor<1x3x8xf32>
    %v94_fill = stablehlo.constant dense<0.044715> : tensor<f32>
    %v94 = stablehlo.broadcast_in_dim %v94_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v95 = stablehlo.multiply %v93, %v94 : tensor<1x3x8xf32>
    %v96 = stablehlo.add %v91, %v95 : tensor<1x3x8xf32>
    %v97_fill = stablehlo.constant dense<0.7978846> : tensor<f32>
    %v97 = stablehlo.broadcast_in_dim %v97_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v98 = stablehlo.multiply %v96, %v97 : tensor<1x3x8xf32>
    %v99 = stablehlo.tanh %v98 : tensor<1x3x8xf32>
    %v100_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v100 = stablehlo.broadcast_in_dim %v100_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v101 = stablehlo.add %v99, %v100 : tensor<1x3x8xf32>
    %v102 = stablehlo.multiply %v91, %v101 : tensor<1x3x8xf32>
    %v103_fill = stablehlo.constant dense<0.5> : tensor<f32>
    %v103 = stablehlo.broadcast_in_dim %v103_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v104 = stablehlo.multiply %v102, %v103 : tensor<1x3x8xf32>
    %v105 = stablehlo.reshape %v104 : (tensor<1x3x8xf32>) -> tensor<3x8xf32>
    %v106 = stablehlo.dot_general %v105, %arg10, contracting_dims = [1] x [0] : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %v107 = stablehlo.broadcast_in_dim %arg11, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %v108 = stablehlo.add %v106, %v107 : tensor<3x4xf32>
    %v109 = stablehlo.reshape %v108 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v110 = stablehlo.add %v66, %v109 : tensor<1x3x4xf32>
    %v111 = stablehlo.subtract %v110, %arg13 : tensor<1x3x4xf32>
    %v112 = stablehlo.multiply %v111, %v111 : tensor<1x3x4xf32>
    %v113_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v113 = stablehlo.reduce(%v112 init: %v113_init) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<f32>
    %v114 = stablehlo.constant dense<12.0> : tensor<f32>
    %v115 = stablehlo.divide %v113, %v114 : tensor<f32>
    %v116 = stablehlo.constant dense<1.0> : tensor<f32>
    %v117 = stablehlo.divide %v116, %v114 : tensor<f32>
    %v121 = stablehlo.constant dense<0.0> : tensor<f32>
    %v122 = stablehlo.add %v121, %v117 : tensor<f32>
    %v125 = stablehlo.broadcast_in_dim %v122, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v126_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v126 = stablehlo.broadcast_in_dim %v126_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v127 = stablehlo.add %v126, %v125 : tensor<1x3x4xf32>
    %v128 = stablehlo.multiply %v127, %v111 : tensor<1x3x4xf32>
    %v129 = stablehlo.multiply %v127, %v111 : tensor<1x3x4xf32>
    %v130_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v130 = stablehlo.broadcast_in_dim %v130_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v131 = stablehlo.add %v130, %v128 : tensor<1x3x4xf32>
    %v132 = stablehlo.add %v131, %v129 : tensor<1x3x4xf32>
    %v134_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v134 = stablehlo.broadcast_in_dim %v134_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v135 = stablehlo.add %v134, %v132 : tensor<1x3x4xf32>
    %v138_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v138 = stablehlo.broadcast_in_dim %v138_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v139 = stablehlo.add %v138, %v135 : tensor<1x3x4xf32>
    %v140_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v140 = stablehlo.broadcast_in_dim %v140_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v141 = stablehlo.add %v140, %v135 : tensor<1x3x4xf32>
    %v142 = stablehlo.reshape %v141 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v143_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v143 = stablehlo.broadcast_in_dim %v143_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v144 = stablehlo.add %v143, %v142 : tensor<3x4xf32>
    %v145_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v145 = stablehlo.broadcast_in_dim %v145_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v146 = stablehlo.add %v145, %v144 : tensor<3x4xf32>
    %v147_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v147 = stablehlo.broadcast_in_dim %v147_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v148 = stablehlo.add %v147, %v144 : tensor<3x4xf32>
    %v149_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v149 = stablehlo.reduce(%v148 init: %v149_init) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v150_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v150 = stablehlo.broadcast_in_dim %v150_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v151 = stablehlo.add %v150, %v149 : tensor<4xf32>
    %v152 = stablehlo.transpose %arg10, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %v153 = stablehlo.dot_general %v146, %v152, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %v154 = stablehlo.transpose %v105, dims = [1, 0] : (tensor<3x8xf32>) -> tensor<8x3xf32>
    %v155 = stablehlo.dot_general %v154, %v146, contracting_dims = [1] x [0] : (tensor<8x3xf32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    %v156_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v156 = stablehlo.broadcast_in_dim %v156_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v157 = stablehlo.add %v156, %v153 : tensor<3x8xf32>
    %v158_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v158 = stablehlo.broadcast_in_dim %v158_fill, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %v159 = stablehlo.add %v158, %v155 : tensor<8x4xf32>
    %v160 = stablehlo.reshape %v157 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
    %v161_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v161 = stablehlo.broadcast_in_dim %v161_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v162 = stablehlo.add %v161, %v160 : tensor<1x3x8xf32>
    %v163 = stablehlo.multiply %v162, %v103 : tensor<1x3x8xf32>
    %v165_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v165 = stablehlo.broadcast_in_dim %v165_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v166 = stablehlo.add %v165, %v163 : tensor<1x3x8xf32>
    %v169 = stablehlo.multiply %v166, %v101 : tensor<1x3x8xf32>
    %v170 = stablehlo.multiply %v166, %v91 : tensor<1x3x8xf32>
    %v171_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v171 = stablehlo.broadcast_in_dim %v171_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v172 = stablehlo.add %v171, %v169 : tensor<1x3x8xf32>
    %v173_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v173 = stablehlo.broadcast_in_dim %v173_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v174 = stablehlo.add %v173, %v170 : tensor<1x3x8xf32>
    %v175_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v175 = stablehlo.broadcast_in_dim %v175_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v176 = stablehlo.add %v175, %v174 : tensor<1x3x8xf32>
    %v179_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v179 = stablehlo.broadcast_in_dim %v179_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v180 = stablehlo.multiply %v99, %v99 : tensor<1x3x8xf32>
    %v181 = stablehlo.subtract %v179, %v180 : tensor<1x3x8xf32>
    %v182 = stablehlo.multiply %v176, %v181 : tensor<1x3x8xf32>
    %v183_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v183 = stablehlo.broadcast_in_dim %v183_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v184 = stablehlo.add %v183, %v182 : tensor<1x3x8xf32>
    %v185 = stablehlo.multiply %v184, %v97 : tensor<1x3x8xf32>
    %v187_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v187 = stablehlo.broadcast_in_dim %v187_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v188 = stablehlo.add %v187, %v185 : tensor<1x3x8xf32>
    %v191 = stablehlo.add %v172, %v188 : tensor<1x3x8xf32>
    %v192_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v192 = stablehlo.broadcast_in_dim %v192_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v193 = stablehlo.add %v192, %v188 : tensor<1x3x8xf32>
    %v194 = stablehlo.multiply %v193, %v94 : tensor<1x3x8xf32>
    %v196_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v196 = stablehlo.broadcast_in_dim %v196_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v197 = stablehlo.add %v196, %v194 : tensor<1x3x8xf32>
    %v200 = stablehlo.multiply %v197, %v91 : tensor<1x3x8xf32>
    %v201 = stablehlo.multiply %v197, %v92 : tensor<1x3x8xf32>
    %v202_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v202 = stablehlo.broadcast_in_dim %v202_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v203 = stablehlo.add %v202, %v200 : tensor<1x3x8xf32>
    %v204 = stablehlo.add %v191, %v201 : tensor<1x3x8xf32>
    %v205 = stablehlo.multiply %v203, %v91 : tensor<1x3x8xf32>
    %v206 = stablehlo.multiply %v203, %v91 : tensor<1x3x8xf32>
    %v207 = stablehlo.add %v204, %v205 : tensor<1x3x8xf32>
    %v208 = stablehlo.add %v207, %v206 : tensor<1x3x8xf32>
    %v209 = stablehlo.reshape %v208 : (tensor<1x3x8xf32>) -> tensor<3x8xf32>
    %v210_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v210 = stablehlo.broadcast_in_dim %v210_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v211 = stablehlo.add %v210, %v209 : tensor<3x8xf32>
    %v212_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v212 = stablehlo.broadcast_in_dim %v212_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v213 = stablehlo.add %v212, %v211 : tensor<3x8xf32>
    %v214_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v214 = stablehlo.broadcast_in_dim %v214_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v215 = stablehlo.add %v214, %v211 : tensor<3x8xf32>
    %v216_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v216 = stablehlo.reduce(%v215 init: %v216_init) applies stablehlo.add across dimensions = [0] : (tensor<3x8xf32>, tensor<f32>) -> tensor<8xf32>
    %v217_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v217 = stablehlo.broadcast_in_dim %v217_fill, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %v218 = stablehlo.add %v217, %v216 : tensor<8xf32>
    %v219 = stablehlo.transpose %arg8, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %v220 = stablehlo.dot_general %v213, %v219, contracting_dims = [1] x [0] : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %v221 = stablehlo.transpose %v87, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v222 = stablehlo.dot_general %v221, %v213, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
    %v223_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v223 = stablehlo.broadcast_in_dim %v223_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v224 = stablehlo.add %v223, %v220 : tensor<3x4xf32>
    %v225_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v225 = stablehlo.broadcast_in_dim %v225_fill, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %v226 = stablehlo.add %v225, %v222 : tensor<4x8xf32>
    %v227 = stablehlo.reshape %v224 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v228_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v228 = stablehlo.broadcast_in_dim %v228_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v229 = stablehlo.add %v228, %v227 : tensor<1x3x4xf32>
    %v230_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v230 = stablehlo.broadcast_in_dim %v230_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v231 = stablehlo.add %v230, %v229 : tensor<1x3x4xf32>
    %v232_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v232 = stablehlo.broadcast_in_dim %v232_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v233 = stablehlo.add %v232, %v229 : tensor<1x3x4xf32>
    %v234_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v234 = stablehlo.reduce(%v233 init: %v234_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v235_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v235 = stablehlo.broadcast_in_dim %v235_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v236 = stablehlo.add %v235, %v234 : tensor<1x4xf32>
    %v237_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v237 = stablehlo.reduce(%v236 init: %v237_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v238_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v238 = stablehlo.broadcast_in_dim %v238_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v239 = stablehlo.add %v238, %v237 : tensor<4xf32>
    %v240 = stablehlo.multiply %v231, %v82 : tensor<1x3x4xf32>
    %v241 = stablehlo.multiply %v231, %v80 : tensor<1x3x4xf32>
    %v242_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v242 = stablehlo.broadcast_in_dim %v242_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v243 = stablehlo.add %v242, %v240 : tensor<1x3x4xf32>
    %v244_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v244 = stablehlo.broadcast_in_dim %v244_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v245 = stablehlo.add %v244, %v241 : tensor<1x3x4xf32>
    %v246_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v246 = stablehlo.reduce(%v245 init: %v246_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v247_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v247 = stablehlo.broadcast_in_dim %v247_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v248 = stablehlo.add %v247, %v246 : tensor<1x4xf32>
    %v249_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v249 = stablehlo.reduce(%v248 init: %v249_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v250_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v250 = stablehlo.broadcast_in_dim %v250_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v251 = stablehlo.add %v250, %v249 : tensor<4xf32>
    %v252 = stablehlo.divide %v243, %v79 : tensor<1x3x4xf32>
    %v253 = stablehlo.multiply %v243, %v80 : tensor<1x3x4xf32>
    %v254 = stablehlo.divide %v253, %v79 : tensor<1x3x4xf32>
    %v255 = stablehlo.negate %v254 : tensor<1x3x4xf32>
    %v256_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v256 = stablehlo.broadcast_in_dim %v256_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v257 = stablehlo.add %v256, %v252 : tensor<1x3x4xf32>
    %v258_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v258 = stablehlo.broadcast_in_dim %v258_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v259 = stablehlo.add %v258, %v255 : tensor<1x3x4xf32>
    %v260_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v260 = stablehlo.reduce(%v259 init: %v260_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v261_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v261 = stablehlo.broadcast_in_dim %v261_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v262 = stablehlo.add %v261, %v260 : tensor<1x3xf32>
    %v263 = stablehlo.add %v78, %v78 : tensor<1x3xf32>
    %v264 = stablehlo.divide %v262, %v263 : tensor<1x3xf32>
    %v265_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v265 = stablehlo.broadcast_in_dim %v265_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v266 = stablehlo.add %v265, %v264 : tensor<1x3xf32>
    %v267_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v267 = stablehlo.broadcast_in_dim %v267_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v268 = stablehlo.add %v267, %v266 : tensor<1x3xf32>
    %v271 = stablehlo.divide %v268, %v74 : tensor<1x3xf32>
    %v275_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v275 = stablehlo.broadcast_in_dim %v275_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v276 = stablehlo.add %v275, %v271 : tensor<1x3xf32>
    %v279 = stablehlo.broadcast_in_dim %v276, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v280_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v280 = stablehlo.broadcast_in_dim %v280_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v281 = stablehlo.add %v280, %v279 : tensor<1x3x4xf32>
    %v282 = stablehlo.multiply %v281, %v71 : tensor<1x3x4xf32>
    %v283 = stablehlo.multiply %v281, %v71 : tensor<1x3x4xf32>
    %v284 = stablehlo.add %v257, %v282 : tensor<1x3x4xf32>
    %v285 = stablehlo.add %v284, %v283 : tensor<1x3x4xf32>
    %v286 = stablehlo.negate %v285 : tensor<1x3x4xf32>
    %v287 = stablehlo.add %v139, %v285 : tensor<1x3x4xf32>
    %v288_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v288 = stablehlo.broadcast_in_dim %v288_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v289 = stablehlo.add %v288, %v286 : tensor<1x3x4xf32>
    %v290_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v290 = stablehlo.reduce(%v289 init: %v290_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v291_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v291 = stablehlo.broadcast_in_dim %v291_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v292 = stablehlo.add %v291, %v290 : tensor<1x3xf32>
    %v293 = stablehlo.divide %v292, %v68 : tensor<1x3xf32>
    %v297_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v297 = stablehlo.broadcast_in_dim %v297_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v298 = stablehlo.add %v297, %v293 : tensor<1x3xf32>
    %v301 = stablehlo.broadcast_in_dim %v298, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v302 = stablehlo.add %v287, %v301 : tensor<1x3x4xf32>
    %v305_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v305 = stablehlo.broadcast_in_dim %v305_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v306 = stablehlo.add %v305, %v302 : tensor<1x3x4xf32>
    %v307 = stablehlo.reshape %v306 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v308_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v308 = stablehlo.broadcast_in_dim %v308_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v309 = stablehlo.add %v308, %v307 : tensor<3x4xf32>
    %v310_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v310 = stablehlo.broadcast_in_dim %v310_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v311 = stablehlo.add %v310, %v309 : tensor<3x4xf32>
    %v312_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v312 = stablehlo.broadcast_in_dim %v312_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v313 = stablehlo.add %v312, %v309 : tensor<3x4xf32>
    %v314_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v314 = stablehlo.reduce(%v313 init: %v314_init) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v315_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v315 = stablehlo.broadcast_in_dim %v315_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v316 = stablehlo.add %v315, %v314 : tensor<4xf32>
    %v317 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %v318 = stablehlo.dot_general %v311, %v317, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v319 = stablehlo.transpose %v61, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v320 = stablehlo.dot_general %v319, %v311, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %v321_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v321 = stablehlo.broadcast_in_dim %v321_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v322 = stablehlo.add %v321, %v318 : tensor<3x4xf32>
    %v323_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v323 = stablehlo.broadcast_in_dim %v323_fill, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %v324 = stablehlo.add %v323, %v320 : tensor<4x4xf32>
    %v325 = stablehlo.reshape %v322 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v326_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v326 = stablehlo.broadcast_in_dim %v326_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v327 = stablehlo.add %v326, %v325 : tensor<1x3x4xf32>
    %v328 = stablehlo.reshape %v327 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v329_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v329 = stablehlo.broadcast_in_dim %v329_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v330 = stablehlo.add %v329, %v328 : tensor<1x3x2x2xf32>
    %v331 = stablehlo.transpose %v330, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v332_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v332 = stablehlo.broadcast_in_dim %v332_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v333 = stablehlo.add %v332, %v331 : tensor<1x2x3x2xf32>
    %v334 = stablehlo.transpose %v48, dims = [0, 1, 3, 2] : (tensor<1x2x3x2xf32>) -> tensor<1x2x2x3xf32>
    %v335 = stablehlo.dot_general %v333, %v334, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v336 = stablehlo.transpose %v57, dims = [0, 1, 3, 2] : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %v337 = stablehlo.dot_general %v336, %v333, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
    %v338_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v338 = stablehlo.broadcast_in_dim %v338_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v339 = stablehlo.add %v338, %v335 : tensor<1x2x3x3xf32>
    %v340_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v340 = stablehlo.broadcast_in_dim %v340_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v341 = stablehlo.add %v340, %v337 : tensor<1x2x3x2xf32>
    %v342 = stablehlo.multiply %v339, %v57 : tensor<1x2x3x3xf32>
    %v343_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v343 = stablehlo.broadcast_in_dim %v343_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v344 = stablehlo.add %v343, %v342 : tensor<1x2x3x3xf32>
    %v345_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v345 = stablehlo.reduce(%v344 init: %v345_init) applies stablehlo.add across dimensions = [3] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %v346 = stablehlo.broadcast_in_dim %v345, dims = [0, 1, 2] : (tensor<1x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v347 = stablehlo.exponential %v56 : tensor<1x2x3x3xf32>
    %v348 = stablehlo.multiply %v347, %v346 : tensor<1x2x3x3xf32>
    %v349 = stablehlo.subtract %v344, %v348 : tensor<1x2x3x3xf32>
    %v350_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v350 = stablehlo.broadcast_in_dim %v350_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v351 = stablehlo.add %v350, %v349 : tensor<1x2x3x3xf32>
    %v352_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v352 = stablehlo.broadcast_in_dim %v352_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v353 = stablehlo.add %v352, %v351 : tensor<1x2x3x3xf32>
    %v362 = stablehlo.multiply %v353, %v51 : tensor<1x2x3x3xf32>
    %v364_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v364 = stablehlo.broadcast_in_dim %v364_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v365 = stablehlo.add %v364, %v362 : tensor<1x2x3x3xf32>
    %v368 = stablehlo.transpose %v49, dims = [0, 1, 3, 2] : (tensor<1x2x2x3xf32>) -> tensor<1x2x3x2xf32>
    %v369 = stablehlo.dot_general %v365, %v368, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
    %v370 = stablehlo.transpose %v44, dims = [0, 1, 3, 2] : (tensor<1x2x3x2xf32>) -> tensor<1x2x2x3xf32>
    %v371 = stablehlo.dot_general %v370, %v365, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x2x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x2x3xf32>
    %v372_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v372 = stablehlo.broadcast_in_dim %v372_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v373 = stablehlo.add %v372, %v369 : tensor<1x2x3x2xf32>
    %v374_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v374 = stablehlo.broadcast_in_dim %v374_fill, dims = [] : (tensor<f32>) -> tensor<1x2x2x3xf32>
    %v375 = stablehlo.add %v374, %v371 : tensor<1x2x2x3xf32>
    %v376 = stablehlo.transpose %v375, dims = [0, 1, 3, 2] : (tensor<1x2x2x3xf32>) -> tensor<1x2x3x2xf32>
    %v377_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v377 = stablehlo.broadcast_in_dim %v377_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v378 = stablehlo.add %v377, %v376 : tensor<1x2x3x2xf32>
    %v379 = stablehlo.transpose %v341, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v380_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v380 = stablehlo.broadcast_in_dim %v380_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v381 = stablehlo.add %v380, %v379 : tensor<1x3x2x2xf32>
    %v382 = stablehlo.reshape %v381 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v383_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v383 = stablehlo.broadcast_in_dim %v383_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v384 = stablehlo.add %v383, %v382 : tensor<1x3x4xf32>
    %v385 = stablehlo.transpose %v378, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v386_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v386 = stablehlo.broadcast_in_dim %v386_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v387 = stablehlo.add %v386, %v385 : tensor<1x3x2x2xf32>
    %v388 = stablehlo.reshape %v387 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v389_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v389 = stablehlo.broadcast_in_dim %v389_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v390 = stablehlo.add %v389, %v388 : tensor<1x3x4xf32>
    %v391 = stablehlo.transpose %v373, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v392_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v392 = stablehlo.broadcast_in_dim %v392_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v393 = stablehlo.add %v392, %v391 : tensor<1x3x2x2xf32>
    %v394 = stablehlo.reshape %v393 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v395_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v395 = stablehlo.broadcast_in_dim %v395_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v396 = stablehlo.add %v395, %v394 : tensor<1x3x4xf32>
    %v397_zero = stablehlo.constant dense<0.0> : tensor<f32>
    %v397 = stablehlo.pad %v384, %v397_zero, low = [0, 0, 8], high = [0, 0, 0], interior = [0, 0, 0] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x12xf32>
    %v398_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v398 = stablehlo.broadcast_in_dim %v398_fill, dims = [] : (tensor<f32>) -> tensor<1x3x12xf32>
    %v399 = stablehlo.add %v398, %v397 : tensor<1x3x12xf32>
    %v400_zero = stablehlo.constant dense<0.0> : tensor<f32>
    %v400 = stablehlo.pad %v390, %v400_zero, low = [0, 0, 4], high = [0, 0, 4], interior = [0, 0, 0] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x12xf32>
    %v401 = stablehlo.add %v399, %v400 : tensor<1x3x12xf32>
    %v402_zero = stablehlo.constant dense<0.0> : tensor<f32>
    %v402 = stablehlo.pad %v396, %v402_zero, low = [0, 0, 0], high = [0, 0, 8], interior = [0, 0, 0] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x12xf32>
    %v403 = stablehlo.add %v401, %v402 : tensor<1x3x12xf32>
    %v404 = stablehlo.reshape %v403 : (tensor<1x3x12xf32>) -> tensor<3x12xf32>
    %v405_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v405 = stablehlo.broadcast_in_dim %v405_fill, dims = [] : (tensor<f32>) -> tensor<3x12xf32>
    %v406 = stablehlo.add %v405, %v404 : tensor<3x12xf32>
    %v407_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v407 = stablehlo.broadcast_in_dim %v407_fill, dims = [] : (tensor<f32>) -> tensor<3x12xf32>
    %v408 = stablehlo.add %v407, %v406 : tensor<3x12xf32>
    %v409_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v409 = stablehlo.broadcast_in_dim %v409_fill, dims = [] : (tensor<f32>) -> tensor<3x12xf32>
    %v410 = stablehlo.add %v409, %v406 : tensor<3x12xf32>
    %v411_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v411 = stablehlo.reduce(%v410 init: %v411_init) applies stablehlo.add across dimensions = [0] : (tensor<3x12xf32>, tensor<f32>) -> tensor<12xf32>
    %v412_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v412 = stablehlo.broadcast_in_dim %v412_fill, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %v413 = stablehlo.add %v412, %v411 : tensor<12xf32>
    %v414 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<4x12xf32>) -> tensor<12x4xf32>
    %v415 = stablehlo.dot_general %v408, %v414, contracting_dims = [1] x [0] : (tensor<3x12xf32>, tensor<12x4xf32>) -> tensor<3x4xf32>
    %v416 = stablehlo.transpose %v35, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v417 = stablehlo.dot_general %v416, %v408, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x12xf32>) -> tensor<4x12xf32>
    %v418_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v418 = stablehlo.broadcast_in_dim %v418_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v419 = stablehlo.add %v418, %v415 : tensor<3x4xf32>
    %v420_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v420 = stablehlo.broadcast_in_dim %v420_fill, dims = [] : (tensor<f32>) -> tensor<4x12xf32>
    %v421 = stablehlo.add %v420, %v417 : tensor<4x12xf32>
    %v422 = stablehlo.reshape %v419 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v423_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v423 = stablehlo.broadcast_in_dim %v423_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v424 = stablehlo.add %v423, %v422 : tensor<1x3x4xf32>
    %v425_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v425 = stablehlo.broadcast_in_dim %v425_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v426 = stablehlo.add %v425, %v424 : tensor<1x3x4xf32>
    %v427_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v427 = stablehlo.broadcast_in_dim %v427_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v428 = stablehlo.add %v427, %v424 : tensor<1x3x4xf32>
    %v429_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v429 = stablehlo.reduce(%v428 init: %v429_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v430_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v430 = stablehlo.broadcast_in_dim %v430_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v431 = stablehlo.add %v430, %v429 : tensor<1x4xf32>
    %v432_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v432 = stablehlo.reduce(%v431 init: %v432_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v433_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v433 = stablehlo.broadcast_in_dim %v433_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v434 = stablehlo.add %v433, %v432 : tensor<4xf32>
    %v436 = stablehlo.multiply %v426, %v28 : tensor<1x3x4xf32>
    %v439_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v439 = stablehlo.broadcast_in_dim %v439_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v440 = stablehlo.add %v439, %v436 : tensor<1x3x4xf32>
    %v441_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v441 = stablehlo.reduce(%v440 init: %v441_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v442_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v442 = stablehlo.broadcast_in_dim %v442_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v443 = stablehlo.add %v442, %v441 : tensor<1x4xf32>
    %v444_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v444 = stablehlo.reduce(%v443 init: %v444_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v445_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v445 = stablehlo.broadcast_in_dim %v445_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v446 = stablehlo.add %v445, %v444 : tensor<4xf32>
    return %v115, %v446, %v434, %v421, %v413, %v324, %v316, %v251, %v239, %v226, %v218, %v159, %v151 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4x12xf32>, tensor<12xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
  }
}
