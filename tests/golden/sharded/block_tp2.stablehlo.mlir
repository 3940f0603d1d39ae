module @topos attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["model"=2]>
  func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %arg1: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %arg2: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}, %arg3: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg4: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg5: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %arg6: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, %arg7: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %arg8: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, %arg9: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %arg10: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, %arg11: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}, %arg12: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg13: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg14: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg15: tensor<1x3x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}, %arg16: tensor<1x3x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}) {
    %v16_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v16 = stablehlo.reduce(%arg15 init: %v16_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v17_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v17 = stablehlo.broadcast_in_dim %v17_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v18 = stablehlo.divide %v16, %v17 : tensor<1x3xf32>
    %v19 = stablehlo.broadcast_in_dim %v18, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v20 = stablehlo.subtract %arg15, %v19 : tensor<1x3x4xf32>
    %v21 = stablehlo.multiply %v20, %v20 : tensor<1x3x4xf32>
    %v22_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v22 = stablehlo.reduce(%v21 init: %v22_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v23_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v23 = stablehlo.broadcast_in_dim %v23_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v24 = stablehlo.divide %v22, %v23 : tensor<1x3xf32>
    %v25_fill = stablehlo.constant dense<1.0e-05> : tensor<f32>
    %v25 = stablehlo.broadcast_in_dim %v25_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v26 = stablehlo.add %v24, %v25 : tensor<1x3xf32>
    %v27 = stablehlo.sqrt %v26 : tensor<1x3xf32>
    %v28 = stablehlo.broadcast_in_dim %v27, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v29 = stablehlo.divide %v20, %v28 : tensor<1x3x4xf32>
    %v30 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v31 = stablehlo.broadcast_in_dim %v30, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v32 = stablehlo.multiply %v29, %v31 : tensor<1x3x4xf32>
    %v33 = stablehlo.broadcast_in_dim %arg4, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v34 = stablehlo.broadcast_in_dim %v33, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v35 = stablehlo.add %v32, %v34 : tensor<1x3x4xf32>
    %v36 = stablehlo.reshape %v35 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v37 = stablehlo.dot_general %v36, %arg5, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v38 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %v39 = stablehlo.add %v37, %v38 : tensor<3x4xf32>
    %v40 = stablehlo.reshape %v39 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v41 = stablehlo.reshape %v35 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v42 = stablehlo.dot_general %v41, %arg7, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v43 = stablehlo.broadcast_in_dim %arg8, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %v44 = stablehlo.add %v42, %v43 : tensor<3x4xf32>
    %v45 = stablehlo.reshape %v44 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v46 = stablehlo.reshape %v35 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v47 = stablehlo.dot_general %v46, %arg9, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v48 = stablehlo.broadcast_in_dim %arg10, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %v49 = stablehlo.add %v47, %v48 : tensor<3x4xf32>
    %v50 = stablehlo.reshape %v49 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v51 = stablehlo.reshape %v40 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v52 = stablehlo.transpose %v51, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v53 = stablehlo.reshape %v45 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v54 = stablehlo.transpose %v53, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v55 = stablehlo.reshape %v50 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v56 = stablehlo.transpose %v55, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v57 = stablehlo.transpose %v54, dims = [0, 1, 3, 2] : (tensor<1x2x3x2xf32>) -> tensor<1x2x2x3xf32>
    %v58 = stablehlo.dot_general %v52, %v57, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v59_fill = stablehlo.constant dense<0.70710677> : tensor<f32>
    %v59 = stablehlo.broadcast_in_dim %v59_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v60 = stablehlo.multiply %v58, %v59 : tensor<1x2x3x3xf32>
    %v61_peak_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %v61_peak = stablehlo.reduce(%v60 init: %v61_peak_init) applies stablehlo.maximum across dimensions = [3] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %v61_peak_spread = stablehlo.broadcast_in_dim %v61_peak, dims = [0, 1, 2] : (tensor<1x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v61_centred = stablehlo.subtract %v60, %v61_peak_spread : tensor<1x2x3x3xf32>
    %v61_exp = stablehlo.exponential %v61_centred : tensor<1x2x3x3xf32>
    %v61_total_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v61_total = stablehlo.reduce(%v61_exp init: %v61_total_init) applies stablehlo.add across dimensions = [3] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %v61_log = stablehlo.log %v61_total : tensor<1x2x3xf32>
    %v61_log_spread = stablehlo.broadcast_in_dim %v61_log, dims = [0, 1, 2] : (tensor<1x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v61 = stablehlo.subtract %v61_centred, %v61_log_spread : tensor<1x2x3x3xf32>
    %v62 = stablehlo.exponential %v61 : tensor<1x2x3x3xf32>
    %v63 = stablehlo.dot_general %v62, %v56, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
    %v64 = stablehlo.transpose %v63, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v65 = stablehlo.reshape %v64 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v66 = stablehlo.reshape %v65 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v67 = stablehlo.dot_general %v66, %arg11, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v68 = stablehlo.broadcast_in_dim %arg12, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %v69 = stablehlo.add %v67, %v68 : tensor<3x4xf32>
    %v70 = stablehlo.reshape %v69 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v71 = stablehlo.add %arg15, %v70 : tensor<1x3x4xf32>
    %v72_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v72 = stablehlo.reduce(%v71 init: %v72_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v73_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v73 = stablehlo.broadcast_in_dim %v73_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v74 = stablehlo.divide %v72, %v73 : tensor<1x3xf32>
    %v75 = stablehlo.broadcast_in_dim %v74, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v76 = stablehlo.subtract %v71, %v75 : tensor<1x3x4xf32>
    %v77 = stablehlo.multiply %v76, %v76 : tensor<1x3x4xf32>
    %v78_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v78 = stablehlo.reduce(%v77 init: %v78_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v79_fill = stablehlo.constant dense<4.0> : tensor<f32>
    %v79 = stablehlo.broadcast_in_dim %v79_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v80 = stablehlo.divide %v78, %v79 : tensor<1x3xf32>
    %v81_fill = stablehlo.constant dense<1.0e-05> : tensor<f32>
    %v81 = stablehlo.broadcast_in_dim %v81_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v82 = stablehlo.add %v80, %v81 : tensor<1x3xf32>
    %v83 = stablehlo.sqrt %v82 : tensor<1x3xf32>
    %v84 = stablehlo.broadcast_in_dim %v83, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v85 = stablehlo.divide %v76, %v84 : tensor<1x3x4xf32>
    %v86 = stablehlo.broadcast_in_dim %arg13, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v87 = stablehlo.broadcast_in_dim %v86, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v88 = stablehlo.multiply %v85, %v87 : tensor<1x3x4xf32>
    %v89 = stablehlo.broadcast_in_dim %arg14, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %v90 = stablehlo.broadcast_in_dim %v89, dims = [0, 2] : (tensor<1x4xf32>) -> tensor<1x3x4xf32>
    %v91 = stablehlo.add %v88, %v90 : tensor<1x3x4xf32>
    %v92 = stablehlo.reshape %v91 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v93 = stablehlo.dot_general %v92, %arg0, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %v94 = stablehlo.reshape %v93 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
    %v95_fill = stablehlo.constant dense<-88.0> : tensor<f32>
    %v95 = stablehlo.broadcast_in_dim %v95_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v96_greater = stablehlo.compare GT, %v94, %v95, FLOAT : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xi1>
    %v96_nan = stablehlo.compare NE, %v94, %v94, FLOAT : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xi1>
    %v96_keep = stablehlo.or %v96_greater, %v96_nan : tensor<1x3x8xi1>
    %v96 = stablehlo.select %v96_keep, %v94, %v95 : tensor<1x3x8xi1>, tensor<1x3x8xf32>
    %v97 = stablehlo.negate %v96 : tensor<1x3x8xf32>
    %v98 = stablehlo.exponential %v97 : tensor<1x3x8xf32>
    %v99_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v99 = stablehlo.broadcast_in_dim %v99_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v100 = stablehlo.add %v98, %v99 : tensor<1x3x8xf32>
    %v101 = stablehlo.divide %v94, %v100 : tensor<1x3x8xf32>
    %v102 = stablehlo.reshape %v91 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v103 = stablehlo.dot_general %v102, %arg1, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %v104 = stablehlo.reshape %v103 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
    %v105 = stablehlo.multiply %v101, %v104 : tensor<1x3x8xf32>
    %v106 = stablehlo.reshape %v105 : (tensor<1x3x8xf32>) -> tensor<3x8xf32>
    %v107 = stablehlo.dot_general %v106, %arg2, contracting_dims = [1] x [0] : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %v108 = stablehlo.reshape %v107 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v109 = stablehlo.add %v71, %v108 : tensor<1x3x4xf32>
    %v111 = stablehlo.subtract %v109, %arg16 : tensor<1x3x4xf32>
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
    %v145 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %v146 = stablehlo.dot_general %v144, %v145, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %v147 = stablehlo.transpose %v106, dims = [1, 0] : (tensor<3x8xf32>) -> tensor<8x3xf32>
    %v148 = stablehlo.dot_general %v147, %v144, contracting_dims = [1] x [0] : (tensor<8x3xf32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    %v149_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v149 = stablehlo.broadcast_in_dim %v149_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v150 = stablehlo.add %v149, %v146 : tensor<3x8xf32>
    %v151_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v151 = stablehlo.broadcast_in_dim %v151_fill, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %v152 = stablehlo.add %v151, %v148 : tensor<8x4xf32>
    %v153 = stablehlo.reshape %v150 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
    %v154_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v154 = stablehlo.broadcast_in_dim %v154_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v155 = stablehlo.add %v154, %v153 : tensor<1x3x8xf32>
    %v156 = stablehlo.multiply %v155, %v104 : tensor<1x3x8xf32>
    %v157 = stablehlo.multiply %v155, %v101 : tensor<1x3x8xf32>
    %v158_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v158 = stablehlo.broadcast_in_dim %v158_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v159 = stablehlo.add %v158, %v156 : tensor<1x3x8xf32>
    %v160_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v160 = stablehlo.broadcast_in_dim %v160_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v161 = stablehlo.add %v160, %v157 : tensor<1x3x8xf32>
    %v162 = stablehlo.reshape %v161 : (tensor<1x3x8xf32>) -> tensor<3x8xf32>
    %v163_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v163 = stablehlo.broadcast_in_dim %v163_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v164 = stablehlo.add %v163, %v162 : tensor<3x8xf32>
    %v165 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %v166 = stablehlo.dot_general %v164, %v165, contracting_dims = [1] x [0] : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %v167 = stablehlo.transpose %v102, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v168 = stablehlo.dot_general %v167, %v164, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
    %v169_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v169 = stablehlo.broadcast_in_dim %v169_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v170 = stablehlo.add %v169, %v166 : tensor<3x4xf32>
    %v171_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v171 = stablehlo.broadcast_in_dim %v171_fill, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %v172 = stablehlo.add %v171, %v168 : tensor<4x8xf32>
    %v173 = stablehlo.reshape %v170 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v174_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v174 = stablehlo.broadcast_in_dim %v174_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v175 = stablehlo.add %v174, %v173 : tensor<1x3x4xf32>
    %v176 = stablehlo.divide %v159, %v100 : tensor<1x3x8xf32>
    %v177 = stablehlo.multiply %v159, %v101 : tensor<1x3x8xf32>
    %v178 = stablehlo.divide %v177, %v100 : tensor<1x3x8xf32>
    %v179 = stablehlo.negate %v178 : tensor<1x3x8xf32>
    %v180_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v180 = stablehlo.broadcast_in_dim %v180_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v181 = stablehlo.add %v180, %v176 : tensor<1x3x8xf32>
    %v182_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v182 = stablehlo.broadcast_in_dim %v182_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v183 = stablehlo.add %v182, %v179 : tensor<1x3x8xf32>
    %v184_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v184 = stablehlo.broadcast_in_dim %v184_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v185 = stablehlo.add %v184, %v183 : tensor<1x3x8xf32>
    %v188 = stablehlo.multiply %v185, %v98 : tensor<1x3x8xf32>
    %v189_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v189 = stablehlo.broadcast_in_dim %v189_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v190 = stablehlo.add %v189, %v188 : tensor<1x3x8xf32>
    %v191 = stablehlo.negate %v190 : tensor<1x3x8xf32>
    %v192_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v192 = stablehlo.broadcast_in_dim %v192_fill, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v193 = stablehlo.add %v192, %v191 : tensor<1x3x8xf32>
    %v194_hit = stablehlo.compare GE, %v94, %v95, FLOAT : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xi1>
    %v194_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v194_one = stablehlo.broadcast_in_dim %v194_one_one, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v194_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v194_zero = stablehlo.broadcast_in_dim %v194_zero_one, dims = [] : (tensor<f32>) -> tensor<1x3x8xf32>
    %v194 = stablehlo.select %v194_hit, %v194_one, %v194_zero : tensor<1x3x8xi1>, tensor<1x3x8xf32>
    %v195 = stablehlo.multiply %v193, %v194 : tensor<1x3x8xf32>
    %v199 = stablehlo.add %v181, %v195 : tensor<1x3x8xf32>
    %v202 = stablehlo.reshape %v199 : (tensor<1x3x8xf32>) -> tensor<3x8xf32>
    %v203_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v203 = stablehlo.broadcast_in_dim %v203_fill, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %v204 = stablehlo.add %v203, %v202 : tensor<3x8xf32>
    %v205 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %v206 = stablehlo.dot_general %v204, %v205, contracting_dims = [1] x [0] : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %v207 = stablehlo.transpose %v92, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v208 = stablehlo.dot_general %v207, %v204, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
    %v209_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v209 = stablehlo.broadcast_in_dim %v209_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v210 = stablehlo.add %v209, %v206 : tensor<3x4xf32>
    %v211_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v211 = stablehlo.broadcast_in_dim %v211_fill, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %v212 = stablehlo.add %v211, %v208 : tensor<4x8xf32>
    %v213 = stablehlo.reshape %v210 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v214 = stablehlo.add %v175, %v213 : tensor<1x3x4xf32>
    %v215_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v215 = stablehlo.broadcast_in_dim %v215_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v216 = stablehlo.add %v215, %v214 : tensor<1x3x4xf32>
    %v217_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v217 = stablehlo.broadcast_in_dim %v217_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v218 = stablehlo.add %v217, %v214 : tensor<1x3x4xf32>
    %v219_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v219 = stablehlo.reduce(%v218 init: %v219_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v220_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v220 = stablehlo.broadcast_in_dim %v220_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v221 = stablehlo.add %v220, %v219 : tensor<1x4xf32>
    %v222_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v222 = stablehlo.reduce(%v221 init: %v222_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v223_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v223 = stablehlo.broadcast_in_dim %v223_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v224 = stablehlo.add %v223, %v222 : tensor<4xf32>
    %v225 = stablehlo.multiply %v216, %v87 : tensor<1x3x4xf32>
    %v226 = stablehlo.multiply %v216, %v85 : tensor<1x3x4xf32>
    %v227_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v227 = stablehlo.broadcast_in_dim %v227_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v228 = stablehlo.add %v227, %v225 : tensor<1x3x4xf32>
    %v229_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v229 = stablehlo.broadcast_in_dim %v229_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v230 = stablehlo.add %v229, %v226 : tensor<1x3x4xf32>
    %v231_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v231 = stablehlo.reduce(%v230 init: %v231_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v232_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v232 = stablehlo.broadcast_in_dim %v232_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v233 = stablehlo.add %v232, %v231 : tensor<1x4xf32>
    %v234_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v234 = stablehlo.reduce(%v233 init: %v234_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v235_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v235 = stablehlo.broadcast_in_dim %v235_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v236 = stablehlo.add %v235, %v234 : tensor<4xf32>
    %v237 = stablehlo.divide %v228, %v84 : tensor<1x3x4xf32>
    %v238 = stablehlo.multiply %v228, %v85 : tensor<1x3x4xf32>
    %v239 = stablehlo.divide %v238, %v84 : tensor<1x3x4xf32>
    %v240 = stablehlo.negate %v239 : tensor<1x3x4xf32>
    %v241_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v241 = stablehlo.broadcast_in_dim %v241_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v242 = stablehlo.add %v241, %v237 : tensor<1x3x4xf32>
    %v243_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v243 = stablehlo.broadcast_in_dim %v243_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v244 = stablehlo.add %v243, %v240 : tensor<1x3x4xf32>
    %v245_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v245 = stablehlo.reduce(%v244 init: %v245_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v246_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v246 = stablehlo.broadcast_in_dim %v246_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v247 = stablehlo.add %v246, %v245 : tensor<1x3xf32>
    %v248 = stablehlo.add %v83, %v83 : tensor<1x3xf32>
    %v249 = stablehlo.divide %v247, %v248 : tensor<1x3xf32>
    %v250_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v250 = stablehlo.broadcast_in_dim %v250_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v251 = stablehlo.add %v250, %v249 : tensor<1x3xf32>
    %v252_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v252 = stablehlo.broadcast_in_dim %v252_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v253 = stablehlo.add %v252, %v251 : tensor<1x3xf32>
    %v256 = stablehlo.divide %v253, %v79 : tensor<1x3xf32>
    %v260_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v260 = stablehlo.broadcast_in_dim %v260_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v261 = stablehlo.add %v260, %v256 : tensor<1x3xf32>
    %v264 = stablehlo.broadcast_in_dim %v261, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v265_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v265 = stablehlo.broadcast_in_dim %v265_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v266 = stablehlo.add %v265, %v264 : tensor<1x3x4xf32>
    %v267 = stablehlo.multiply %v266, %v76 : tensor<1x3x4xf32>
    %v268 = stablehlo.multiply %v266, %v76 : tensor<1x3x4xf32>
    %v269 = stablehlo.add %v242, %v267 : tensor<1x3x4xf32>
    %v270 = stablehlo.add %v269, %v268 : tensor<1x3x4xf32>
    %v271 = stablehlo.negate %v270 : tensor<1x3x4xf32>
    %v272 = stablehlo.add %v139, %v270 : tensor<1x3x4xf32>
    %v273_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v273 = stablehlo.broadcast_in_dim %v273_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v274 = stablehlo.add %v273, %v271 : tensor<1x3x4xf32>
    %v275_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v275 = stablehlo.reduce(%v274 init: %v275_init) applies stablehlo.add across dimensions = [2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3xf32>
    %v276_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v276 = stablehlo.broadcast_in_dim %v276_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v277 = stablehlo.add %v276, %v275 : tensor<1x3xf32>
    %v278 = stablehlo.divide %v277, %v73 : tensor<1x3xf32>
    %v282_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v282 = stablehlo.broadcast_in_dim %v282_fill, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %v283 = stablehlo.add %v282, %v278 : tensor<1x3xf32>
    %v286 = stablehlo.broadcast_in_dim %v283, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<1x3x4xf32>
    %v287 = stablehlo.add %v272, %v286 : tensor<1x3x4xf32>
    %v290_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v290 = stablehlo.broadcast_in_dim %v290_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v291 = stablehlo.add %v290, %v287 : tensor<1x3x4xf32>
    %v292 = stablehlo.reshape %v291 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v293_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v293 = stablehlo.broadcast_in_dim %v293_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v294 = stablehlo.add %v293, %v292 : tensor<3x4xf32>
    %v295_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v295 = stablehlo.broadcast_in_dim %v295_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v296 = stablehlo.add %v295, %v294 : tensor<3x4xf32>
    %v297_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v297 = stablehlo.broadcast_in_dim %v297_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v298 = stablehlo.add %v297, %v294 : tensor<3x4xf32>
    %v299_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v299 = stablehlo.reduce(%v298 init: %v299_init) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v300_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v300 = stablehlo.broadcast_in_dim %v300_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v301 = stablehlo.add %v300, %v299 : tensor<4xf32>
    %v302 = stablehlo.transpose %arg11, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %v303 = stablehlo.dot_general %v296, %v302, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v304 = stablehlo.transpose %v66, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v305 = stablehlo.dot_general %v304, %v296, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %v306_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v306 = stablehlo.broadcast_in_dim %v306_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v307 = stablehlo.add %v306, %v303 : tensor<3x4xf32>
    %v308_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v308 = stablehlo.broadcast_in_dim %v308_fill, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %v309 = stablehlo.add %v308, %v305 : tensor<4x4xf32>
    %v310 = stablehlo.reshape %v307 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v311_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v311 = stablehlo.broadcast_in_dim %v311_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v312 = stablehlo.add %v311, %v310 : tensor<1x3x4xf32>
    %v313 = stablehlo.reshape %v312 : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
    %v314_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v314 = stablehlo.broadcast_in_dim %v314_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v315 = stablehlo.add %v314, %v313 : tensor<1x3x2x2xf32>
    %v316 = stablehlo.transpose %v315, dims = [0, 2, 1, 3] : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
    %v317_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v317 = stablehlo.broadcast_in_dim %v317_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v318 = stablehlo.add %v317, %v316 : tensor<1x2x3x2xf32>
    %v319 = stablehlo.transpose %v56, dims = [0, 1, 3, 2] : (tensor<1x2x3x2xf32>) -> tensor<1x2x2x3xf32>
    %v320 = stablehlo.dot_general %v318, %v319, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v321 = stablehlo.transpose %v62, dims = [0, 1, 3, 2] : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %v322 = stablehlo.dot_general %v321, %v318, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
    %v323_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v323 = stablehlo.broadcast_in_dim %v323_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v324 = stablehlo.add %v323, %v320 : tensor<1x2x3x3xf32>
    %v325_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v325 = stablehlo.broadcast_in_dim %v325_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v326 = stablehlo.add %v325, %v322 : tensor<1x2x3x2xf32>
    %v327 = stablehlo.multiply %v324, %v62 : tensor<1x2x3x3xf32>
    %v328_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v328 = stablehlo.broadcast_in_dim %v328_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v329 = stablehlo.add %v328, %v327 : tensor<1x2x3x3xf32>
    %v330_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v330 = stablehlo.reduce(%v329 init: %v330_init) applies stablehlo.add across dimensions = [3] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %v331 = stablehlo.broadcast_in_dim %v330, dims = [0, 1, 2] : (tensor<1x2x3xf32>) -> tensor<1x2x3x3xf32>
    %v332 = stablehlo.exponential %v61 : tensor<1x2x3x3xf32>
    %v333 = stablehlo.multiply %v332, %v331 : tensor<1x2x3x3xf32>
    %v334 = stablehlo.subtract %v329, %v333 : tensor<1x2x3x3xf32>
    %v335_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v335 = stablehlo.broadcast_in_dim %v335_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v336 = stablehlo.add %v335, %v334 : tensor<1x2x3x3xf32>
    %v337 = stablehlo.multiply %v336, %v59 : tensor<1x2x3x3xf32>
    %v339_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v339 = stablehlo.broadcast_in_dim %v339_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %v340 = stablehlo.add %v339, %v337 : tensor<1x2x3x3xf32>
    %v343 = stablehlo.transpose %v57, dims = [0, 1, 3, 2] : (tensor<1x2x2x3xf32>) -> tensor<1x2x3x2xf32>
    %v344 = stablehlo.dot_general %v340, %v343, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
    %v345 = stablehlo.transpose %v52, dims = [0, 1, 3, 2] : (tensor<1x2x3x2xf32>) -> tensor<1x2x2x3xf32>
    %v346 = stablehlo.dot_general %v345, %v340, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x2x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x2x3xf32>
    %v347_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v347 = stablehlo.broadcast_in_dim %v347_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v348 = stablehlo.add %v347, %v344 : tensor<1x2x3x2xf32>
    %v349_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v349 = stablehlo.broadcast_in_dim %v349_fill, dims = [] : (tensor<f32>) -> tensor<1x2x2x3xf32>
    %v350 = stablehlo.add %v349, %v346 : tensor<1x2x2x3xf32>
    %v351 = stablehlo.transpose %v350, dims = [0, 1, 3, 2] : (tensor<1x2x2x3xf32>) -> tensor<1x2x3x2xf32>
    %v352_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v352 = stablehlo.broadcast_in_dim %v352_fill, dims = [] : (tensor<f32>) -> tensor<1x2x3x2xf32>
    %v353 = stablehlo.add %v352, %v351 : tensor<1x2x3x2xf32>
    %v354 = stablehlo.transpose %v326, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v355_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v355 = stablehlo.broadcast_in_dim %v355_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v356 = stablehlo.add %v355, %v354 : tensor<1x3x2x2xf32>
    %v357 = stablehlo.reshape %v356 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v358_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v358 = stablehlo.broadcast_in_dim %v358_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v359 = stablehlo.add %v358, %v357 : tensor<1x3x4xf32>
    %v360 = stablehlo.transpose %v353, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v361_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v361 = stablehlo.broadcast_in_dim %v361_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v362 = stablehlo.add %v361, %v360 : tensor<1x3x2x2xf32>
    %v363 = stablehlo.reshape %v362 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v364_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v364 = stablehlo.broadcast_in_dim %v364_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v365 = stablehlo.add %v364, %v363 : tensor<1x3x4xf32>
    %v366 = stablehlo.transpose %v348, dims = [0, 2, 1, 3] : (tensor<1x2x3x2xf32>) -> tensor<1x3x2x2xf32>
    %v367_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v367 = stablehlo.broadcast_in_dim %v367_fill, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %v368 = stablehlo.add %v367, %v366 : tensor<1x3x2x2xf32>
    %v369 = stablehlo.reshape %v368 : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
    %v370_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v370 = stablehlo.broadcast_in_dim %v370_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v371 = stablehlo.add %v370, %v369 : tensor<1x3x4xf32>
    %v372 = stablehlo.reshape %v359 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v373_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v373 = stablehlo.broadcast_in_dim %v373_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v374 = stablehlo.add %v373, %v372 : tensor<3x4xf32>
    %v375_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v375 = stablehlo.broadcast_in_dim %v375_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v376 = stablehlo.add %v375, %v374 : tensor<3x4xf32>
    %v377_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v377 = stablehlo.broadcast_in_dim %v377_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v378 = stablehlo.add %v377, %v374 : tensor<3x4xf32>
    %v379_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v379 = stablehlo.reduce(%v378 init: %v379_init) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v380_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v380 = stablehlo.broadcast_in_dim %v380_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v381 = stablehlo.add %v380, %v379 : tensor<4xf32>
    %v382 = stablehlo.transpose %arg9, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %v383 = stablehlo.dot_general %v376, %v382, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v384 = stablehlo.transpose %v46, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v385 = stablehlo.dot_general %v384, %v376, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %v386_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v386 = stablehlo.broadcast_in_dim %v386_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v387 = stablehlo.add %v386, %v383 : tensor<3x4xf32>
    %v388_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v388 = stablehlo.broadcast_in_dim %v388_fill, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %v389 = stablehlo.add %v388, %v385 : tensor<4x4xf32>
    %v390 = stablehlo.reshape %v387 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v391_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v391 = stablehlo.broadcast_in_dim %v391_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v392 = stablehlo.add %v391, %v390 : tensor<1x3x4xf32>
    %v393 = stablehlo.reshape %v365 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v394_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v394 = stablehlo.broadcast_in_dim %v394_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v395 = stablehlo.add %v394, %v393 : tensor<3x4xf32>
    %v396_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v396 = stablehlo.broadcast_in_dim %v396_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v397 = stablehlo.add %v396, %v395 : tensor<3x4xf32>
    %v398_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v398 = stablehlo.broadcast_in_dim %v398_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v399 = stablehlo.add %v398, %v395 : tensor<3x4xf32>
    %v400_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v400 = stablehlo.reduce(%v399 init: %v400_init) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v401_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v401 = stablehlo.broadcast_in_dim %v401_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v402 = stablehlo.add %v401, %v400 : tensor<4xf32>
    %v403 = stablehlo.transpose %arg7, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %v404 = stablehlo.dot_general %v397, %v403, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v405 = stablehlo.transpose %v41, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v406 = stablehlo.dot_general %v405, %v397, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %v407_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v407 = stablehlo.broadcast_in_dim %v407_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v408 = stablehlo.add %v407, %v404 : tensor<3x4xf32>
    %v409_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v409 = stablehlo.broadcast_in_dim %v409_fill, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %v410 = stablehlo.add %v409, %v406 : tensor<4x4xf32>
    %v411 = stablehlo.reshape %v408 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v412 = stablehlo.add %v392, %v411 : tensor<1x3x4xf32>
    %v413 = stablehlo.reshape %v371 : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
    %v414_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v414 = stablehlo.broadcast_in_dim %v414_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v415 = stablehlo.add %v414, %v413 : tensor<3x4xf32>
    %v416_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v416 = stablehlo.broadcast_in_dim %v416_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v417 = stablehlo.add %v416, %v415 : tensor<3x4xf32>
    %v418_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v418 = stablehlo.broadcast_in_dim %v418_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v419 = stablehlo.add %v418, %v415 : tensor<3x4xf32>
    %v420_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v420 = stablehlo.reduce(%v419 init: %v420_init) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v421_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v421 = stablehlo.broadcast_in_dim %v421_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v422 = stablehlo.add %v421, %v420 : tensor<4xf32>
    %v423 = stablehlo.transpose %arg5, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %v424 = stablehlo.dot_general %v417, %v423, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %v425 = stablehlo.transpose %v36, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %v426 = stablehlo.dot_general %v425, %v417, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %v427_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v427 = stablehlo.broadcast_in_dim %v427_fill, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %v428 = stablehlo.add %v427, %v424 : tensor<3x4xf32>
    %v429_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v429 = stablehlo.broadcast_in_dim %v429_fill, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %v430 = stablehlo.add %v429, %v426 : tensor<4x4xf32>
    %v431 = stablehlo.reshape %v428 : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
    %v432 = stablehlo.add %v412, %v431 : tensor<1x3x4xf32>
    %v433_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v433 = stablehlo.broadcast_in_dim %v433_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v434 = stablehlo.add %v433, %v432 : tensor<1x3x4xf32>
    %v435_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v435 = stablehlo.broadcast_in_dim %v435_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v436 = stablehlo.add %v435, %v432 : tensor<1x3x4xf32>
    %v437_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v437 = stablehlo.reduce(%v436 init: %v437_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v438_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v438 = stablehlo.broadcast_in_dim %v438_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v439 = stablehlo.add %v438, %v437 : tensor<1x4xf32>
    %v440_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v440 = stablehlo.reduce(%v439 init: %v440_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v441_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v441 = stablehlo.broadcast_in_dim %v441_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v442 = stablehlo.add %v441, %v440 : tensor<4xf32>
    %v444 = stablehlo.multiply %v434, %v29 : tensor<1x3x4xf32>
    %v447_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v447 = stablehlo.broadcast_in_dim %v447_fill, dims = [] : (tensor<f32>) -> tensor<1x3x4xf32>
    %v448 = stablehlo.add %v447, %v444 : tensor<1x3x4xf32>
    %v449_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v449 = stablehlo.reduce(%v448 init: %v449_init) applies stablehlo.add across dimensions = [1] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %v450_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v450 = stablehlo.broadcast_in_dim %v450_fill, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %v451 = stablehlo.add %v450, %v449 : tensor<1x4xf32>
    %v452_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v452 = stablehlo.reduce(%v451 init: %v452_init) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %v453_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v453 = stablehlo.broadcast_in_dim %v453_fill, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %v454 = stablehlo.add %v453, %v452 : tensor<4xf32>
    return %v115, %v454, %v442, %v430, %v422, %v410, %v402, %v389, %v381, %v309, %v301, %v236, %v224, %v212, %v172, %v152 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>
  }
}
