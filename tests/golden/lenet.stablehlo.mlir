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
    %v78_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v78 = stablehlo.broadcast_in_dim %v78_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v79_hit = stablehlo.compare GE, %v71, %v78, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %v79_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v79_one = stablehlo.broadcast_in_dim %v79_one_one, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v79_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v79_zero = stablehlo.broadcast_in_dim %v79_zero_one, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v79 = stablehlo.select %v79_hit, %v79_one, %v79_zero : tensor<2xi1>, tensor<2xf32>
    %v80_hit = stablehlo.compare GE, %v78, %v71, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %v80_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v80_one = stablehlo.broadcast_in_dim %v80_one_one, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v80_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v80_zero = stablehlo.broadcast_in_dim %v80_zero_one, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v80 = stablehlo.select %v80_hit, %v80_one, %v80_zero : tensor<2xi1>, tensor<2xf32>
    %v81 = stablehlo.subtract %v79, %v80 : tensor<2xf32>
    %v82 = stablehlo.multiply %v71, %v81 : tensor<2xf32>
    %v83 = stablehlo.add %v82, %v78 : tensor<2xf32>
    %v84 = stablehlo.negate %v83 : tensor<2xf32>
    %v85_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v85 = stablehlo.broadcast_in_dim %v85_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v86_hit = stablehlo.compare GE, %v84, %v85, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %v86_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v86_one = stablehlo.broadcast_in_dim %v86_one_one, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v86_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v86_zero = stablehlo.broadcast_in_dim %v86_zero_one, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v86 = stablehlo.select %v86_hit, %v86_one, %v86_zero : tensor<2xi1>, tensor<2xf32>
    %v87_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v87 = stablehlo.reduce(%v86 init: %v87_init) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %v88 = stablehlo.constant dense<2.0> : tensor<f32>
    %v89 = stablehlo.subtract %v88, %v87 : tensor<f32>
    %v90 = stablehlo.divide %v77, %v89 : tensor<f32>
    %v91 = stablehlo.constant dense<1.0> : tensor<f32>
    %v92 = stablehlo.divide %v91, %v89 : tensor<f32>
    %v96 = stablehlo.constant dense<0.0> : tensor<f32>
    %v97 = stablehlo.add %v96, %v92 : tensor<f32>
    %v108 = stablehlo.negate %v97 : tensor<f32>
    %v109 = stablehlo.constant dense<0.0> : tensor<f32>
    %v110 = stablehlo.add %v109, %v97 : tensor<f32>
    %v111 = stablehlo.constant dense<0.0> : tensor<f32>
    %v112 = stablehlo.add %v111, %v108 : tensor<f32>
    %v113 = stablehlo.broadcast_in_dim %v112, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v114_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v114 = stablehlo.broadcast_in_dim %v114_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v115 = stablehlo.add %v114, %v113 : tensor<2x2xf32>
    %v117 = stablehlo.multiply %v115, %v9 : tensor<2x2xf32>
    %v120_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v120 = stablehlo.broadcast_in_dim %v120_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v121 = stablehlo.add %v120, %v117 : tensor<2x2xf32>
    %v122 = stablehlo.broadcast_in_dim %v110, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v123_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v123 = stablehlo.broadcast_in_dim %v123_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v124 = stablehlo.add %v123, %v122 : tensor<2xf32>
    %v126 = stablehlo.multiply %v124, %v71 : tensor<2xf32>
    %v129_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v129 = stablehlo.broadcast_in_dim %v129_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v130 = stablehlo.add %v129, %v126 : tensor<2xf32>
    %v131 = stablehlo.broadcast_in_dim %v130, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %v132 = stablehlo.broadcast_in_dim %v72, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %v133 = stablehlo.subtract %v70, %v132 : tensor<2x2xf32>
    %v134 = stablehlo.exponential %v133 : tensor<2x2xf32>
    %v135 = stablehlo.multiply %v131, %v134 : tensor<2x2xf32>
    %v136 = stablehlo.add %v121, %v135 : tensor<2x2xf32>
    %v139_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v139 = stablehlo.broadcast_in_dim %v139_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v140 = stablehlo.add %v139, %v136 : tensor<2x2xf32>
    %v141_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v141 = stablehlo.broadcast_in_dim %v141_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v142 = stablehlo.add %v141, %v136 : tensor<2x2xf32>
    %v143_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v143 = stablehlo.reduce(%v142 init: %v143_init) applies stablehlo.add across dimensions = [0] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v144_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v144 = stablehlo.broadcast_in_dim %v144_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v145 = stablehlo.add %v144, %v143 : tensor<2xf32>
    %v146 = stablehlo.transpose %arg6, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %v147 = stablehlo.dot_general %v140, %v146, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v148 = stablehlo.transpose %v67, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %v149 = stablehlo.dot_general %v148, %v140, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    %v150_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v150 = stablehlo.broadcast_in_dim %v150_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v151 = stablehlo.add %v150, %v147 : tensor<2x3xf32>
    %v152_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v152 = stablehlo.broadcast_in_dim %v152_fill, dims = [] : (tensor<f32>) -> tensor<3x2xf32>
    %v153 = stablehlo.add %v152, %v149 : tensor<3x2xf32>
    %v154_hit = stablehlo.compare GE, %v66, %v65, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %v154_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v154_one = stablehlo.broadcast_in_dim %v154_one_one, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v154_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v154_zero = stablehlo.broadcast_in_dim %v154_zero_one, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v154 = stablehlo.select %v154_hit, %v154_one, %v154_zero : tensor<2x3xi1>, tensor<2x3xf32>
    %v156_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v156 = stablehlo.broadcast_in_dim %v156_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v157 = stablehlo.subtract %v156, %v154 : tensor<2x3xf32>
    %v158 = stablehlo.multiply %v151, %v157 : tensor<2x3xf32>
    %v161_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v161 = stablehlo.broadcast_in_dim %v161_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v162 = stablehlo.add %v161, %v158 : tensor<2x3xf32>
    %v163_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v163 = stablehlo.broadcast_in_dim %v163_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v164 = stablehlo.add %v163, %v162 : tensor<2x3xf32>
    %v165_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v165 = stablehlo.broadcast_in_dim %v165_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v166 = stablehlo.add %v165, %v162 : tensor<2x3xf32>
    %v167_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v167 = stablehlo.reduce(%v166 init: %v167_init) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    %v168_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v168 = stablehlo.broadcast_in_dim %v168_fill, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %v169 = stablehlo.add %v168, %v167 : tensor<3xf32>
    %v170 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %v171 = stablehlo.dot_general %v164, %v170, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %v172 = stablehlo.transpose %v62, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %v173 = stablehlo.dot_general %v172, %v164, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v174_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v174 = stablehlo.broadcast_in_dim %v174_fill, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %v175 = stablehlo.add %v174, %v171 : tensor<2x2xf32>
    %v176_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v176 = stablehlo.broadcast_in_dim %v176_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v177 = stablehlo.add %v176, %v173 : tensor<2x3xf32>
    %v178 = stablehlo.reshape %v175 : (tensor<2x2xf32>) -> tensor<2x2x1x1xf32>
    %v179_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v179 = stablehlo.broadcast_in_dim %v179_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1xf32>
    %v180 = stablehlo.add %v179, %v178 : tensor<2x2x1x1xf32>
    %v182_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v182 = stablehlo.broadcast_in_dim %v182_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v186_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v186 = stablehlo.broadcast_in_dim %v186_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v189_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v189 = stablehlo.broadcast_in_dim %v189_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v191_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v191 = stablehlo.broadcast_in_dim %v191_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v194_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v194 = stablehlo.broadcast_in_dim %v194_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x4xf32>
    %v198_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v198 = stablehlo.broadcast_in_dim %v198_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v201_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v201 = stablehlo.broadcast_in_dim %v201_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v203_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v203 = stablehlo.broadcast_in_dim %v203_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v209_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v209 = stablehlo.broadcast_in_dim %v209_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v212_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v212 = stablehlo.broadcast_in_dim %v212_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v214_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v214 = stablehlo.broadcast_in_dim %v214_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x1xf32>
    %v221_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v221 = stablehlo.broadcast_in_dim %v221_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x1x2x2xf32>
    %v224_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v224 = stablehlo.broadcast_in_dim %v224_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x2x1x2xf32>
    %v227_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v227 = stablehlo.broadcast_in_dim %v227_fill, dims = [] : (tensor<f32>) -> tensor<2x2x1x2x2xf32>
    %v229_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v229_scattered = "stablehlo.select_and_scatter"(%v49, %v180, %v229_init) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%v229_a: tensor<f32>, %v229_b: tensor<f32>):
      %v229_ge = stablehlo.compare GE, %v229_a, %v229_b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %v229_ge : tensor<i1>
    }, {
    ^bb0(%v229_a_: tensor<f32>, %v229_b_: tensor<f32>):
      %v229_sum = stablehlo.add %v229_a_, %v229_b_ : tensor<f32>
      stablehlo.return %v229_sum : tensor<f32>
    }) : (tensor<2x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<f32>) -> tensor<2x2x2x2xf32>
    %v229 = stablehlo.reshape %v229_scattered : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
    %v230_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v230 = stablehlo.broadcast_in_dim %v230_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v231 = stablehlo.add %v230, %v229 : tensor<2x2x2x2xf32>
    %v232_hit = stablehlo.compare GE, %v48, %v47, FLOAT : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xi1>
    %v232_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v232_one = stablehlo.broadcast_in_dim %v232_one_one, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v232_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v232_zero = stablehlo.broadcast_in_dim %v232_zero_one, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v232 = stablehlo.select %v232_hit, %v232_one, %v232_zero : tensor<2x2x2x2xi1>, tensor<2x2x2x2xf32>
    %v234_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v234 = stablehlo.broadcast_in_dim %v234_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v235 = stablehlo.subtract %v234, %v232 : tensor<2x2x2x2xf32>
    %v236 = stablehlo.multiply %v231, %v235 : tensor<2x2x2x2xf32>
    %v239_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v239 = stablehlo.broadcast_in_dim %v239_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v240 = stablehlo.add %v239, %v236 : tensor<2x2x2x2xf32>
    %v241 = stablehlo.transpose %v240, dims = [0, 2, 3, 1] : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
    %v242_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v242 = stablehlo.broadcast_in_dim %v242_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2xf32>
    %v243 = stablehlo.add %v242, %v241 : tensor<2x2x2x2xf32>
    %v244 = stablehlo.reshape %v243 : (tensor<2x2x2x2xf32>) -> tensor<8x2xf32>
    %v245_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v245 = stablehlo.broadcast_in_dim %v245_fill, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %v246 = stablehlo.add %v245, %v244 : tensor<8x2xf32>
    %v247_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v247 = stablehlo.broadcast_in_dim %v247_fill, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %v248 = stablehlo.add %v247, %v246 : tensor<8x2xf32>
    %v249_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v249 = stablehlo.broadcast_in_dim %v249_fill, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %v250 = stablehlo.add %v249, %v246 : tensor<8x2xf32>
    %v251_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v251 = stablehlo.reduce(%v250 init: %v251_init) applies stablehlo.add across dimensions = [0] : (tensor<8x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v252_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v252 = stablehlo.broadcast_in_dim %v252_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v253 = stablehlo.add %v252, %v251 : tensor<2xf32>
    %v254 = stablehlo.transpose %v42, dims = [1, 0] : (tensor<18x2xf32>) -> tensor<2x18xf32>
    %v257_gradient = stablehlo.reshape %v248 : (tensor<8x2xf32>) -> tensor<2x2x2x2xf32>
    %v257_convolution = stablehlo.convolution(%v36, %v257_gradient) dim_numbers = [f, b, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<2x3x3x2xf32>
    %v257 = stablehlo.reshape %v257_convolution : (tensor<2x3x3x2xf32>) -> tensor<18x2xf32>
    %v258_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v258 = stablehlo.broadcast_in_dim %v258_fill, dims = [] : (tensor<f32>) -> tensor<8x18xf32>
    %v260_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v260 = stablehlo.broadcast_in_dim %v260_fill, dims = [] : (tensor<f32>) -> tensor<18x2xf32>
    %v261 = stablehlo.add %v260, %v257 : tensor<18x2xf32>
    %v262 = stablehlo.transpose %v261, dims = [1, 0] : (tensor<18x2xf32>) -> tensor<2x18xf32>
    %v263_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v263 = stablehlo.broadcast_in_dim %v263_fill, dims = [] : (tensor<f32>) -> tensor<2x18xf32>
    %v264 = stablehlo.add %v263, %v262 : tensor<2x18xf32>
    %v265 = stablehlo.reshape %v264 : (tensor<2x18xf32>) -> tensor<2x2x3x3xf32>
    %v266_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v266 = stablehlo.broadcast_in_dim %v266_fill, dims = [] : (tensor<f32>) -> tensor<2x2x3x3xf32>
    %v267 = stablehlo.add %v266, %v265 : tensor<2x2x3x3xf32>
    %v269_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v269 = stablehlo.broadcast_in_dim %v269_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x2x3x3xf32>
    %v272_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v272 = stablehlo.broadcast_in_dim %v272_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x3x2x3xf32>
    %v275_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v275 = stablehlo.broadcast_in_dim %v275_fill, dims = [] : (tensor<f32>) -> tensor<2x2x2x3x4xf32>
    %v277_gradient = stablehlo.reshape %v248 : (tensor<8x2xf32>) -> tensor<2x2x2x2xf32>
    %v277_kernel = stablehlo.reshape %v254 : (tensor<2x18xf32>) -> tensor<2x2x3x3xf32>
    %v277_kernel_reversed = stablehlo.reverse %v277_kernel, dims = [2, 3] : tensor<2x2x3x3xf32>
    %v277_convolution = stablehlo.convolution(%v277_gradient, %v277_kernel_reversed) dim_numbers = [b, 0, 1, f]x[i, o, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x4x4xf32>
    %v277 = stablehlo.reshape %v277_convolution : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %v278_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v278 = stablehlo.broadcast_in_dim %v278_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4xf32>
    %v279 = stablehlo.add %v278, %v277 : tensor<2x2x4x4xf32>
    %v281_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v281 = stablehlo.broadcast_in_dim %v281_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v285_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v285 = stablehlo.broadcast_in_dim %v285_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v288_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v288 = stablehlo.broadcast_in_dim %v288_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v290_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v290 = stablehlo.broadcast_in_dim %v290_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v293_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v293 = stablehlo.broadcast_in_dim %v293_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x4xf32>
    %v297_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v297 = stablehlo.broadcast_in_dim %v297_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v300_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v300 = stablehlo.broadcast_in_dim %v300_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v302_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v302 = stablehlo.broadcast_in_dim %v302_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v308_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v308 = stablehlo.broadcast_in_dim %v308_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v311_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v311 = stablehlo.broadcast_in_dim %v311_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v313_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v313 = stablehlo.broadcast_in_dim %v313_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x1xf32>
    %v320_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v320 = stablehlo.broadcast_in_dim %v320_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x4x2x2xf32>
    %v323_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v323 = stablehlo.broadcast_in_dim %v323_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x2x4x2xf32>
    %v326_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v326 = stablehlo.broadcast_in_dim %v326_fill, dims = [] : (tensor<f32>) -> tensor<2x2x4x2x8xf32>
    %v328_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v328_scattered = "stablehlo.select_and_scatter"(%v24, %v279, %v328_init) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%v328_a: tensor<f32>, %v328_b: tensor<f32>):
      %v328_ge = stablehlo.compare GE, %v328_a, %v328_b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %v328_ge : tensor<i1>
    }, {
    ^bb0(%v328_a_: tensor<f32>, %v328_b_: tensor<f32>):
      %v328_sum = stablehlo.add %v328_a_, %v328_b_ : tensor<f32>
      stablehlo.return %v328_sum : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x8x8xf32>
    %v328 = stablehlo.reshape %v328_scattered : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %v329_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v329 = stablehlo.broadcast_in_dim %v329_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v330 = stablehlo.add %v329, %v328 : tensor<2x2x8x8xf32>
    %v331_hit = stablehlo.compare GE, %v23, %v22, FLOAT : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %v331_one_one = stablehlo.constant dense<1.0> : tensor<f32>
    %v331_one = stablehlo.broadcast_in_dim %v331_one_one, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v331_zero_one = stablehlo.constant dense<0.0> : tensor<f32>
    %v331_zero = stablehlo.broadcast_in_dim %v331_zero_one, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v331 = stablehlo.select %v331_hit, %v331_one, %v331_zero : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    %v333_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v333 = stablehlo.broadcast_in_dim %v333_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v334 = stablehlo.subtract %v333, %v331 : tensor<2x2x8x8xf32>
    %v335 = stablehlo.multiply %v330, %v334 : tensor<2x2x8x8xf32>
    %v338_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v338 = stablehlo.broadcast_in_dim %v338_fill, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %v339 = stablehlo.add %v338, %v335 : tensor<2x2x8x8xf32>
    %v340 = stablehlo.transpose %v339, dims = [0, 2, 3, 1] : (tensor<2x2x8x8xf32>) -> tensor<2x8x8x2xf32>
    %v341_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v341 = stablehlo.broadcast_in_dim %v341_fill, dims = [] : (tensor<f32>) -> tensor<2x8x8x2xf32>
    %v342 = stablehlo.add %v341, %v340 : tensor<2x8x8x2xf32>
    %v343 = stablehlo.reshape %v342 : (tensor<2x8x8x2xf32>) -> tensor<128x2xf32>
    %v344_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v344 = stablehlo.broadcast_in_dim %v344_fill, dims = [] : (tensor<f32>) -> tensor<128x2xf32>
    %v345 = stablehlo.add %v344, %v343 : tensor<128x2xf32>
    %v346_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v346 = stablehlo.broadcast_in_dim %v346_fill, dims = [] : (tensor<f32>) -> tensor<128x2xf32>
    %v347 = stablehlo.add %v346, %v345 : tensor<128x2xf32>
    %v348_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v348 = stablehlo.broadcast_in_dim %v348_fill, dims = [] : (tensor<f32>) -> tensor<128x2xf32>
    %v349 = stablehlo.add %v348, %v345 : tensor<128x2xf32>
    %v350_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v350 = stablehlo.reduce(%v349 init: %v350_init) applies stablehlo.add across dimensions = [0] : (tensor<128x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v351_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v351 = stablehlo.broadcast_in_dim %v351_fill, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %v352 = stablehlo.add %v351, %v350 : tensor<2xf32>
    %v356_gradient = stablehlo.reshape %v347 : (tensor<128x2xf32>) -> tensor<2x8x8x2xf32>
    %v356_convolution = stablehlo.convolution(%arg8, %v356_gradient) dim_numbers = [f, b, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x1x8x8xf32>, tensor<2x8x8x2xf32>) -> tensor<1x3x3x2xf32>
    %v356 = stablehlo.reshape %v356_convolution : (tensor<1x3x3x2xf32>) -> tensor<9x2xf32>
    %v359_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v359 = stablehlo.broadcast_in_dim %v359_fill, dims = [] : (tensor<f32>) -> tensor<9x2xf32>
    %v360 = stablehlo.add %v359, %v356 : tensor<9x2xf32>
    %v361 = stablehlo.transpose %v360, dims = [1, 0] : (tensor<9x2xf32>) -> tensor<2x9xf32>
    %v362_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v362 = stablehlo.broadcast_in_dim %v362_fill, dims = [] : (tensor<f32>) -> tensor<2x9xf32>
    %v363 = stablehlo.add %v362, %v361 : tensor<2x9xf32>
    %v364 = stablehlo.reshape %v363 : (tensor<2x9xf32>) -> tensor<2x1x3x3xf32>
    %v365_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v365 = stablehlo.broadcast_in_dim %v365_fill, dims = [] : (tensor<f32>) -> tensor<2x1x3x3xf32>
    %v366 = stablehlo.add %v365, %v364 : tensor<2x1x3x3xf32>
    return %v90, %v366, %v352, %v267, %v253, %v177, %v169, %v153, %v145 : tensor<f32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2xf32>
  }
}
