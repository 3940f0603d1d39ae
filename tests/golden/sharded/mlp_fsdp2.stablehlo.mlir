module @topos attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2]>
  func.func public @main(%arg0: tensor<2x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg2: tensor<3x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg3: tensor<1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg4: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg5: tensor<4x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> (tensor<f32>, tensor<2x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, tensor<3xf32>, tensor<3x1xf32>, tensor<1xf32>) {
    %arg0_whole = sdy.sharding_constraint %arg0 <@mesh, [{}, {}]> : tensor<2x3xf32>
    %v6 = stablehlo.dot_general %arg4, %arg0_whole, contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %v7 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
    %v8 = stablehlo.add %v6, %v7 : tensor<4x3xf32>
    %v9 = stablehlo.tanh %v8 : tensor<4x3xf32>
    %v10 = stablehlo.dot_general %v9, %arg2, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
    %v11 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<1xf32>) -> tensor<4x1xf32>
    %v12 = stablehlo.add %v10, %v11 : tensor<4x1xf32>
    %v13 = stablehlo.subtract %v12, %arg5 : tensor<4x1xf32>
    %v14 = stablehlo.multiply %v13, %v13 : tensor<4x1xf32>
    %v15_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v15 = stablehlo.reduce(%v14 init: %v15_init) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x1xf32>, tensor<f32>) -> tensor<f32>
    %v16 = stablehlo.constant dense<4.0> : tensor<f32>
    %v17 = stablehlo.divide %v15, %v16 : tensor<f32>
    %v18 = stablehlo.constant dense<1.0> : tensor<f32>
    %v19 = stablehlo.divide %v18, %v16 : tensor<f32>
    %v23 = stablehlo.constant dense<0.0> : tensor<f32>
    %v24 = stablehlo.add %v23, %v19 : tensor<f32>
    %v27 = stablehlo.broadcast_in_dim %v24, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v28_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v28 = stablehlo.broadcast_in_dim %v28_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v29 = stablehlo.add %v28, %v27 : tensor<4x1xf32>
    %v30 = stablehlo.multiply %v29, %v13 : tensor<4x1xf32>
    %v31 = stablehlo.multiply %v29, %v13 : tensor<4x1xf32>
    %v32_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v32 = stablehlo.broadcast_in_dim %v32_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v33 = stablehlo.add %v32, %v30 : tensor<4x1xf32>
    %v34 = stablehlo.add %v33, %v31 : tensor<4x1xf32>
    %v36_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v36 = stablehlo.broadcast_in_dim %v36_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v37 = stablehlo.add %v36, %v34 : tensor<4x1xf32>
    %v40_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v40 = stablehlo.broadcast_in_dim %v40_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v41 = stablehlo.add %v40, %v37 : tensor<4x1xf32>
    %v42_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v42 = stablehlo.broadcast_in_dim %v42_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v43 = stablehlo.add %v42, %v37 : tensor<4x1xf32>
    %v44_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v44 = stablehlo.reduce(%v43 init: %v44_init) applies stablehlo.add across dimensions = [0] : (tensor<4x1xf32>, tensor<f32>) -> tensor<1xf32>
    %v45_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v45 = stablehlo.broadcast_in_dim %v45_fill, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %v46 = stablehlo.add %v45, %v44 : tensor<1xf32>
    %v47 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<3x1xf32>) -> tensor<1x3xf32>
    %v48 = stablehlo.dot_general %v41, %v47, contracting_dims = [1] x [0] : (tensor<4x1xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
    %v49 = stablehlo.transpose %v9, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %v50 = stablehlo.dot_general %v49, %v41, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
    %v51_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v51 = stablehlo.broadcast_in_dim %v51_fill, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %v52 = stablehlo.add %v51, %v48 : tensor<4x3xf32>
    %v53_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v53 = stablehlo.broadcast_in_dim %v53_fill, dims = [] : (tensor<f32>) -> tensor<3x1xf32>
    %v54 = stablehlo.add %v53, %v50 : tensor<3x1xf32>
    %v55_fill = stablehlo.constant dense<1.0> : tensor<f32>
    %v55 = stablehlo.broadcast_in_dim %v55_fill, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %v56 = stablehlo.multiply %v9, %v9 : tensor<4x3xf32>
    %v57 = stablehlo.subtract %v55, %v56 : tensor<4x3xf32>
    %v58 = stablehlo.multiply %v52, %v57 : tensor<4x3xf32>
    %v59_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v59 = stablehlo.broadcast_in_dim %v59_fill, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %v60 = stablehlo.add %v59, %v58 : tensor<4x3xf32>
    %v61_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v61 = stablehlo.broadcast_in_dim %v61_fill, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %v62 = stablehlo.add %v61, %v60 : tensor<4x3xf32>
    %v63_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v63 = stablehlo.broadcast_in_dim %v63_fill, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %v64 = stablehlo.add %v63, %v60 : tensor<4x3xf32>
    %v65_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v65 = stablehlo.reduce(%v64 init: %v65_init) applies stablehlo.add across dimensions = [0] : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
    %v66_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v66 = stablehlo.broadcast_in_dim %v66_fill, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %v67 = stablehlo.add %v66, %v65 : tensor<3xf32>
    %v70 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
    %v71 = stablehlo.dot_general %v70, %v62, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %v74_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v74 = stablehlo.broadcast_in_dim %v74_fill, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %v75 = stablehlo.add %v74, %v71 : tensor<2x3xf32>
    return %v17, %v75, %v67, %v54, %v46 : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x1xf32>, tensor<1xf32>
  }
}
