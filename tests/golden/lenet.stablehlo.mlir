module @topos {
  func.func public @main(%arg0: tensor<2x1x3x3xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2x2x3x3xf32>, %arg3: tensor<2xf32>, %arg4: tensor<2x3xf32>, %arg5: tensor<3xf32>, %arg6: tensor<3x2xf32>, %arg7: tensor<2xf32>, %arg8: tensor<2x1x8x8xf32>, %arg9: tensor<2xi32>) -> (tensor<f32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2xf32>) {
    %v16 = stablehlo.reshape %arg0 : (tensor<2x1x3x3xf32>) -> tensor<2x9xf32>
    %v17 = stablehlo.transpose %v16, dims = [1, 0] : (tensor<2x9xf32>) -> tensor<9x2xf32>
    %v20_kernel = stablehlo.reshape %v17 : (tensor<9x2xf32>) -> tensor<1x3x3x2xf32>
    %v20_convolution = stablehlo.convolution(%arg8, %v20_kernel) dim_numbers = [b, f, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x1x8x8xf32>, tensor<1x3x3x2xf32>) -> tensor<2x8x8x2xf32>
    %v20_product = stablehlo.reshape %v20_convolution : (tensor<2x8x8x2xf32>) -> tensor<128x2xf32>
    %v20_bias = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<2xf32>) -> tensor<128x2xf32>
    %v20 = stablehlo.add %v20_product, %v20_bias : tensor<128x2xf32>
    %v21 = stablehlo.reshape %v20 : (tensor<128x2xf32>) -> tensor<2x8x8x2xf32>
    %v22 = stablehlo.transpose %v21, dims = [0, 3, 1, 2] : (tensor<2x8x8x2xf32>) -> tensor<2x2x8x8xf32>
    %v23_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v23 = stablehlo.broadcast_in_dim %v23_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v24_greater = stablehlo.compare GT, %v23, %v22, FLOAT : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %v24_nan = stablehlo.compare NE, %v23, %v23, FLOAT : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %v24_keep = stablehlo.or %v24_greater, %v24_nan : tensor<2x2x8x8xi1>
    %v24 = stablehlo.select %v24_keep, %v23, %v22 : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    %v36_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %v36 = "stablehlo.reduce_window"(%v24, %v36_init) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%v36_a: tensor<f32>, %v36_b: tensor<f32>):
      %v36_max = stablehlo.maximum %v36_a, %v36_b : tensor<f32>
      stablehlo.return %v36_max : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
    %v41 = stablehlo.reshape %arg2 : (tensor<2x2x3x3xf32>) -> tensor<2x18xf32>
    %v42 = stablehlo.transpose %v41, dims = [1, 0] : (tensor<2x18xf32>) -> tensor<18x2xf32>
    %v45_kernel = stablehlo.reshape %v42 : (tensor<18x2xf32>) -> tensor<2x3x3x2xf32>
    %v45_convolution = stablehlo.convolution(%v36, %v45_kernel) dim_numbers = [b, f, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2x3x3x2xf32>) -> tensor<2x2x2x2xf32>
    %v45_product = stablehlo.reshape %v45_convolution : (tensor<2x2x2x2xf32>) -> tensor<8x2xf32>
    %v45_bias = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<2xf32>) -> tensor<8x2xf32>
    %v45 = stablehlo.add %v45_product, %v45_bias : tensor<8x2xf32>
    %v46 = stablehlo.reshape %v45 : (tensor<8x2xf32>) -> tensor<2x2x2x2xf32>
    %v47 = stablehlo.transpose %v46, dims = [0, 3, 1, 2] : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
    %v48_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v48 = stablehlo.broadcast_in_dim %v48_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v49_greater = stablehlo.compare GT, %v48, %v47, FLOAT : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xi1>
    %v49_nan = stablehlo.compare NE, %v48, %v48, FLOAT : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xi1>
    %v49_keep = stablehlo.or %v49_greater, %v49_nan : tensor<2x2x2x2xi1>
    %v49 = stablehlo.select %v49_keep, %v48, %v47 : tensor<2x2x2x2xi1>, tensor<2x2x2x2xf32>
    %v61_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %v61 = "stablehlo.reduce_window"(%v49, %v61_init) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%v61_a: tensor<f32>, %v61_b: tensor<f32>):
      %v61_max = stablehlo.maximum %v61_a, %v61_b : tensor<f32>
      stablehlo.return %v61_max : tensor<f32>
    }) : (tensor<2x2x2x2xf32>, tensor<f32>) -> tensor<2x2x1x1xf32>
    %v62 = stablehlo.reshape %v61 : (tensor<2x2x1x1xf32>) -> tensor<2x2xf32>
    %v63 = stablehlo.dot_general %v62, %arg4, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v64 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %v65 = stablehlo.add %v63, %v64 : tensor<2x3xf32>
    %v66_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v66 = stablehlo.broadcast_in_dim %v66_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v67_greater = stablehlo.compare GT, %v66, %v65, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %v67_nan = stablehlo.compare NE, %v66, %v66, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %v67_keep = stablehlo.or %v67_greater, %v67_nan : tensor<2x3xi1>
    %v67 = stablehlo.select %v67_keep, %v66, %v65 : tensor<2x3xi1>, tensor<2x3xf32>
    %v68 = stablehlo.dot_general %v67, %arg6, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %v69 = stablehlo.broadcast_in_dim %arg7, dims = [1] : (tensor<2xf32>) -> tensor<2x2xf32>
    %v70 = stablehlo.add %v68, %v69 : tensor<2x2xf32>
    %v9_spread = stablehlo.broadcast_in_dim %arg9, dims = [0] : (tensor<2xi32>) -> tensor<2x2xi32>
    %v9_columns = stablehlo.iota dim = 1 : tensor<2x2xi32>
    %v9_hit = stablehlo.compare EQ, %v9_spread, %v9_columns, SIGNED : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi1>
    %v71_v9_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v71_v9_one = stablehlo.broadcast_in_dim %v71_v9_one_one, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v71_v9_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v71_v9_zero = stablehlo.broadcast_in_dim %v71_v9_zero_one, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v9 = stablehlo.select %v9_hit, %v71_v9_one, %v71_v9_zero : tensor<2x2xi1>, tensor<2x2xf32>
    %v71_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v71 = stablehlo.reduce(%v9 init: %v71_init) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v72_peak_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %v72_peak = stablehlo.reduce(%v70 init: %v72_peak_init) applies stablehlo.maximum across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v72_peak_spread = stablehlo.broadcast_in_dim %v72_peak, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %v72_centred = stablehlo.subtract %v70, %v72_peak_spread : tensor<2x2xf32>
    %v72_exp = stablehlo.exponential %v72_centred : tensor<2x2xf32>
    %v72_total_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v72_total = stablehlo.reduce(%v72_exp init: %v72_total_init) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v72_log = stablehlo.log %v72_total : tensor<2xf32>
    %v72 = stablehlo.add %v72_peak, %v72_log : tensor<2xf32>
    %v73 = stablehlo.multiply %v71, %v72 : tensor<2xf32>
    %v74_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v74 = stablehlo.reduce(%v73 init: %v74_init) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %v75 = stablehlo.multiply %v9, %v70 : tensor<2x2xf32>
    %v76_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v76 = stablehlo.reduce(%v75 init: %v76_init) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<f32>
    %v77 = stablehlo.subtract %v74, %v76 : tensor<f32>
    %v78 = stablehlo.constant dense<2.0> : tensor<f32>
    %v79 = stablehlo.divide %v77, %v78 : tensor<f32>
    %v80 = stablehlo.constant dense<1.0> : tensor<f32>
    %v81 = stablehlo.divide %v80, %v78 : tensor<f32>
    %v85 = stablehlo.constant dense<0.0> : tensor<f32>
    %v86 = stablehlo.add %v85, %v81 : tensor<f32>
    %v89 = stablehlo.negate %v86 : tensor<f32>
    %v90 = stablehlo.constant dense<0.0> : tensor<f32>
    %v91 = stablehlo.add %v90, %v86 : tensor<f32>
    %v92 = stablehlo.constant dense<0.0> : tensor<f32>
    %v93 = stablehlo.add %v92, %v89 : tensor<f32>
    %v94 = stablehlo.broadcast_in_dim %v93, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v95_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v95 = stablehlo.broadcast_in_dim %v95_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v96 = stablehlo.add %v95, %v94 : tensor<2x2xf32>
    %v98 = stablehlo.multiply %v96, %v9 : tensor<2x2xf32>
    %v101_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v101 = stablehlo.broadcast_in_dim %v101_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v102 = stablehlo.add %v101, %v98 : tensor<2x2xf32>
    %v103 = stablehlo.broadcast_in_dim %v91, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v104_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v104 = stablehlo.broadcast_in_dim %v104_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v105 = stablehlo.add %v104, %v103 : tensor<2xf32>
    %v107 = stablehlo.multiply %v105, %v71 : tensor<2xf32>
    %v110_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v110 = stablehlo.broadcast_in_dim %v110_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v111 = stablehlo.add %v110, %v107 : tensor<2xf32>
    %v112 = stablehlo.broadcast_in_dim %v111, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %v113 = stablehlo.broadcast_in_dim %v72, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %v114 = stablehlo.subtract %v70, %v113 : tensor<2x2xf32>
    %v115 = stablehlo.exponential %v114 : tensor<2x2xf32>
    %v116 = stablehlo.multiply %v112, %v115 : tensor<2x2xf32>
    %v117 = stablehlo.add %v102, %v116 : tensor<2x2xf32>
    %v120_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v120 = stablehlo.broadcast_in_dim %v120_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v121 = stablehlo.add %v120, %v117 : tensor<2x2xf32>
    %v122_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v122 = stablehlo.broadcast_in_dim %v122_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v123 = stablehlo.add %v122, %v117 : tensor<2x2xf32>
    %v124_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v124 = stablehlo.reduce(%v123 init: %v124_init) applies stablehlo.add across dimensions = [0] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v125_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v125 = stablehlo.broadcast_in_dim %v125_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v126 = stablehlo.add %v125, %v124 : tensor<2xf32>
    %v127 = stablehlo.transpose %arg6, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %v128 = stablehlo.dot_general %v121, %v127, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v129 = stablehlo.transpose %v67, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %v130 = stablehlo.dot_general %v129, %v121, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    %v131_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v131 = stablehlo.broadcast_in_dim %v131_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v132 = stablehlo.add %v131, %v128 : tensor<2x3xf32>
    %v133_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v133 = stablehlo.broadcast_in_dim %v133_fill, dims = [] : (tensor<f32>) -> tensor<3x2xf32>
    %v134 = stablehlo.add %v133, %v130 : tensor<3x2xf32>
    %v135_hit = stablehlo.compare GE, %v66, %v65, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %v135_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v135_one = stablehlo.broadcast_in_dim %v135_one_one, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v135_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v135_zero = stablehlo.broadcast_in_dim %v135_zero_one, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v135 = stablehlo.select %v135_hit, %v135_one, %v135_zero : tensor<2x3xi1>, tensor<2x3xf32>
    %v137_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v137 = stablehlo.broadcast_in_dim %v137_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v138 = stablehlo.subtract %v137, %v135 : tensor<2x3xf32>
    %v139 = stablehlo.multiply %v132, %v138 : tensor<2x3xf32>
    %v142_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v142 = stablehlo.broadcast_in_dim %v142_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v143 = stablehlo.add %v142, %v139 : tensor<2x3xf32>
    %v144_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v144 = stablehlo.broadcast_in_dim %v144_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v145 = stablehlo.add %v144, %v143 : tensor<2x3xf32>
    %v146_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v146 = stablehlo.broadcast_in_dim %v146_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v147 = stablehlo.add %v146, %v143 : tensor<2x3xf32>
    %v148_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v148 = stablehlo.reduce(%v147 init: %v148_init) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    %v149_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v149 = stablehlo.broadcast_in_dim %v149_fill, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %v150 = stablehlo.add %v149, %v148 : tensor<3xf32>
    %v151 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %v152 = stablehlo.dot_general %v145, %v151, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %v153 = stablehlo.transpose %v62, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %v154 = stablehlo.dot_general %v153, %v145, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v155_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v155 = stablehlo.broadcast_in_dim %v155_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v156 = stablehlo.add %v155, %v152 : tensor<2x2xf32>
    %v157_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v157 = stablehlo.broadcast_in_dim %v157_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v158 = stablehlo.add %v157, %v154 : tensor<2x3xf32>
    %v159 = stablehlo.reshape %v156 : (tensor<2x2xf32>) -> tensor<2x2x1x1xf32>
    %v160_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v160 = stablehlo.broadcast_in_dim %v160_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1xf32>
    %v161 = stablehlo.add %v160, %v159 : tensor<2x2x1x1xf32>
    %v163_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v163 = stablehlo.broadcast_in_dim %v163_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v167_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v167 = stablehlo.broadcast_in_dim %v167_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v170_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v170 = stablehlo.broadcast_in_dim %v170_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v172_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v172 = stablehlo.broadcast_in_dim %v172_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v175_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v175 = stablehlo.broadcast_in_dim %v175_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x4xf32>
    %v179_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v179 = stablehlo.broadcast_in_dim %v179_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v182_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v182 = stablehlo.broadcast_in_dim %v182_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v184_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v184 = stablehlo.broadcast_in_dim %v184_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v190_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v190 = stablehlo.broadcast_in_dim %v190_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v193_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v193 = stablehlo.broadcast_in_dim %v193_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v195_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v195 = stablehlo.broadcast_in_dim %v195_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v202_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v202 = stablehlo.broadcast_in_dim %v202_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x2x2xf32>
    %v205_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v205 = stablehlo.broadcast_in_dim %v205_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x2x1x2xf32>
    %v208_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v208 = stablehlo.broadcast_in_dim %v208_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x2x2xf32>
    %v210_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v210_scattered = "stablehlo.select_and_scatter"(%v49, %v161, %v210_init) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%v210_a: tensor<f32>, %v210_b: tensor<f32>):
      %v210_ge = stablehlo.compare GE, %v210_a, %v210_b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %v210_ge : tensor<i1>
    }, {
    ^bb0(%v210_a_: tensor<f32>, %v210_b_: tensor<f32>):
      %v210_sum = stablehlo.add %v210_a_, %v210_b_ : tensor<f32>
      stablehlo.return %v210_sum : tensor<f32>
    }) : (tensor<2x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<f32>) -> tensor<2x2x2x2xf32>
    %v210 = stablehlo.reshape %v210_scattered : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
    %v211_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v211 = stablehlo.broadcast_in_dim %v211_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v212 = stablehlo.add %v211, %v210 : tensor<2x2x2x2xf32>
    %v213_hit = stablehlo.compare GE, %v48, %v47, FLOAT : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xi1>
    %v213_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v213_one = stablehlo.broadcast_in_dim %v213_one_one, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v213_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v213_zero = stablehlo.broadcast_in_dim %v213_zero_one, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v213 = stablehlo.select %v213_hit, %v213_one, %v213_zero : tensor<2x2x2x2xi1>, tensor<2x2x2x2xf32>
    %v215_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v215 = stablehlo.broadcast_in_dim %v215_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v216 = stablehlo.subtract %v215, %v213 : tensor<2x2x2x2xf32>
    %v217 = stablehlo.multiply %v212, %v216 : tensor<2x2x2x2xf32>
    %v220_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v220 = stablehlo.broadcast_in_dim %v220_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v221 = stablehlo.add %v220, %v217 : tensor<2x2x2x2xf32>
    %v222 = stablehlo.transpose %v221, dims = [0, 2, 3, 1] : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
    %v223_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v223 = stablehlo.broadcast_in_dim %v223_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v224 = stablehlo.add %v223, %v222 : tensor<2x2x2x2xf32>
    %v225 = stablehlo.reshape %v224 : (tensor<2x2x2x2xf32>) -> tensor<8x2xf32>
    %v226_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v226 = stablehlo.broadcast_in_dim %v226_fill, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %v227 = stablehlo.add %v226, %v225 : tensor<8x2xf32>
    %v228_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v228 = stablehlo.broadcast_in_dim %v228_fill, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %v229 = stablehlo.add %v228, %v227 : tensor<8x2xf32>
    %v230_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v230 = stablehlo.broadcast_in_dim %v230_fill, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %v231 = stablehlo.add %v230, %v227 : tensor<8x2xf32>
    %v232_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v232 = stablehlo.reduce(%v231 init: %v232_init) applies stablehlo.add across dimensions = [0] : (tensor<8x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v233_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v233 = stablehlo.broadcast_in_dim %v233_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v234 = stablehlo.add %v233, %v232 : tensor<2xf32>
    %v235 = stablehlo.transpose %v42, dims = [1, 0] : (tensor<18x2xf32>) -> tensor<2x18xf32>
    %v238_gradient = stablehlo.reshape %v229 : (tensor<8x2xf32>) -> tensor<2x2x2x2xf32>
    %v238_convolution = stablehlo.convolution(%v36, %v238_gradient) dim_numbers = [f, b, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<2x3x3x2xf32>
    %v238 = stablehlo.reshape %v238_convolution : (tensor<2x3x3x2xf32>) -> tensor<18x2xf32>
    %v239_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v239 = stablehlo.broadcast_in_dim %v239_fill, dims = [] : (tensor<f32>) -> tensor<8x18xf32>
    %v241_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v241 = stablehlo.broadcast_in_dim %v241_fill, dims = [] : (tensor<f32>) -> tensor<18x2xf32>
    %v242 = stablehlo.add %v241, %v238 : tensor<18x2xf32>
    %v243 = stablehlo.transpose %v242, dims = [1, 0] : (tensor<18x2xf32>) -> tensor<2x18xf32>
    %v244_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v244 = stablehlo.broadcast_in_dim %v244_fill, dims = [] : (tensor<f32>) -> tensor<2x18xf32>
    %v245 = stablehlo.add %v244, %v243 : tensor<2x18xf32>
    %v246 = stablehlo.reshape %v245 : (tensor<2x18xf32>) -> tensor<2x2x3x3xf32>
    %v247_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v247 = stablehlo.broadcast_in_dim %v247_fill, dims = [] : (tensor<f32>) -> tensor<2x2x3x3xf32>
    %v248 = stablehlo.add %v247, %v246 : tensor<2x2x3x3xf32>
    %v250_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v250 = stablehlo.broadcast_in_dim %v250_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2x3x3xf32>
    %v253_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v253 = stablehlo.broadcast_in_dim %v253_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x3x2x3xf32>
    %v256_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v256 = stablehlo.broadcast_in_dim %v256_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x3x4xf32>
    %v258_gradient = stablehlo.reshape %v229 : (tensor<8x2xf32>) -> tensor<2x2x2x2xf32>
    %v258_kernel = stablehlo.reshape %v235 : (tensor<2x18xf32>) -> tensor<2x2x3x3xf32>
    %v258_kernel_reversed = stablehlo.reverse %v258_kernel, dims = [2, 3] : tensor<2x2x3x3xf32>
    %v258_convolution = stablehlo.convolution(%v258_gradient, %v258_kernel_reversed) dim_numbers = [b, 0, 1, f]x[i, o, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x4x4xf32>
    %v258 = stablehlo.reshape %v258_convolution : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %v259_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v259 = stablehlo.broadcast_in_dim %v259_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4xf32>
    %v260 = stablehlo.add %v259, %v258 : tensor<2x2x4x4xf32>
    %v262_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v262 = stablehlo.broadcast_in_dim %v262_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v266_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v266 = stablehlo.broadcast_in_dim %v266_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v269_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v269 = stablehlo.broadcast_in_dim %v269_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v271_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v271 = stablehlo.broadcast_in_dim %v271_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v274_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v274 = stablehlo.broadcast_in_dim %v274_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x4xf32>
    %v278_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v278 = stablehlo.broadcast_in_dim %v278_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v281_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v281 = stablehlo.broadcast_in_dim %v281_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v283_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v283 = stablehlo.broadcast_in_dim %v283_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v289_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v289 = stablehlo.broadcast_in_dim %v289_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v292_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v292 = stablehlo.broadcast_in_dim %v292_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v294_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v294 = stablehlo.broadcast_in_dim %v294_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v301_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v301 = stablehlo.broadcast_in_dim %v301_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x2x2xf32>
    %v304_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v304 = stablehlo.broadcast_in_dim %v304_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x2x4x2xf32>
    %v307_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v307 = stablehlo.broadcast_in_dim %v307_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x2x8xf32>
    %v309_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v309_scattered = "stablehlo.select_and_scatter"(%v24, %v260, %v309_init) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%v309_a: tensor<f32>, %v309_b: tensor<f32>):
      %v309_ge = stablehlo.compare GE, %v309_a, %v309_b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %v309_ge : tensor<i1>
    }, {
    ^bb0(%v309_a_: tensor<f32>, %v309_b_: tensor<f32>):
      %v309_sum = stablehlo.add %v309_a_, %v309_b_ : tensor<f32>
      stablehlo.return %v309_sum : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x8x8xf32>
    %v309 = stablehlo.reshape %v309_scattered : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %v310_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v310 = stablehlo.broadcast_in_dim %v310_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v311 = stablehlo.add %v310, %v309 : tensor<2x2x8x8xf32>
    %v312_hit = stablehlo.compare GE, %v23, %v22, FLOAT : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %v312_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v312_one = stablehlo.broadcast_in_dim %v312_one_one, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v312_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v312_zero = stablehlo.broadcast_in_dim %v312_zero_one, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v312 = stablehlo.select %v312_hit, %v312_one, %v312_zero : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    %v314_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v314 = stablehlo.broadcast_in_dim %v314_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v315 = stablehlo.subtract %v314, %v312 : tensor<2x2x8x8xf32>
    %v316 = stablehlo.multiply %v311, %v315 : tensor<2x2x8x8xf32>
    %v319_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v319 = stablehlo.broadcast_in_dim %v319_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v320 = stablehlo.add %v319, %v316 : tensor<2x2x8x8xf32>
    %v321 = stablehlo.transpose %v320, dims = [0, 2, 3, 1] : (tensor<2x2x8x8xf32>) -> tensor<2x8x8x2xf32>
    %v322_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v322 = stablehlo.broadcast_in_dim %v322_fill, dims = [] : (tensor<f32>) -> tensor<2x8x8x2xf32>
    %v323 = stablehlo.add %v322, %v321 : tensor<2x8x8x2xf32>
    %v324 = stablehlo.reshape %v323 : (tensor<2x8x8x2xf32>) -> tensor<128x2xf32>
    %v325_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v325 = stablehlo.broadcast_in_dim %v325_fill, dims = [] : (tensor<f32>) -> tensor<128x2xf32>
    %v326 = stablehlo.add %v325, %v324 : tensor<128x2xf32>
    %v327_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v327 = stablehlo.broadcast_in_dim %v327_fill, dims = [] : (tensor<f32>) -> tensor<128x2xf32>
    %v328 = stablehlo.add %v327, %v326 : tensor<128x2xf32>
    %v329_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v329 = stablehlo.broadcast_in_dim %v329_fill, dims = [] : (tensor<f32>) -> tensor<128x2xf32>
    %v330 = stablehlo.add %v329, %v326 : tensor<128x2xf32>
    %v331_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v331 = stablehlo.reduce(%v330 init: %v331_init) applies stablehlo.add across dimensions = [0] : (tensor<128x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v332_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v332 = stablehlo.broadcast_in_dim %v332_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v333 = stablehlo.add %v332, %v331 : tensor<2xf32>
    %v337_gradient = stablehlo.reshape %v328 : (tensor<128x2xf32>) -> tensor<2x8x8x2xf32>
    %v337_convolution = stablehlo.convolution(%arg8, %v337_gradient) dim_numbers = [f, b, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x1x8x8xf32>, tensor<2x8x8x2xf32>) -> tensor<1x3x3x2xf32>
    %v337 = stablehlo.reshape %v337_convolution : (tensor<1x3x3x2xf32>) -> tensor<9x2xf32>
    %v340_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v340 = stablehlo.broadcast_in_dim %v340_fill, dims = [] : (tensor<f32>) -> tensor<9x2xf32>
    %v341 = stablehlo.add %v340, %v337 : tensor<9x2xf32>
    %v342 = stablehlo.transpose %v341, dims = [1, 0] : (tensor<9x2xf32>) -> tensor<2x9xf32>
    %v343_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v343 = stablehlo.broadcast_in_dim %v343_fill, dims = [] : (tensor<f32>) -> tensor<2x9xf32>
    %v344 = stablehlo.add %v343, %v342 : tensor<2x9xf32>
    %v345 = stablehlo.reshape %v344 : (tensor<2x9xf32>) -> tensor<2x1x3x3xf32>
    %v346_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v346 = stablehlo.broadcast_in_dim %v346_fill, dims = [] : (tensor<f32>) -> tensor<2x1x3x3xf32>
    %v347 = stablehlo.add %v346, %v345 : tensor<2x1x3x3xf32>
    return %v79, %v347, %v333, %v248, %v234, %v158, %v150, %v134, %v126 : tensor<f32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2xf32>
  }
}
