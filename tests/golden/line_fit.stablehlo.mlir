module @topos {
  func.func public @main(%arg0: tensor<2x1xf32>, %arg1: tensor<1xf32>, %arg2: tensor<4x2xf32>, %arg3: tensor<4x1xf32>) -> (tensor<f32>, tensor<2x1xf32>, tensor<1xf32>) {
    %v4 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x1xf32>) -> tensor<4x1xf32>
    %v5_scalar = stablehlo.reshape %arg1 : (tensor<1xf32>) -> tensor<f32>
    %v5 = stablehlo.broadcast_in_dim %v5_scalar, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v6 = stablehlo.add %v4, %v5 : tensor<4x1xf32>
    %v7 = stablehlo.subtract %v6, %arg3 : tensor<4x1xf32>
    %v8 = stablehlo.multiply %v7, %v7 : tensor<4x1xf32>
    %v9_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v9 = stablehlo.reduce(%v8 init: %v9_init) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x1xf32>, tensor<f32>) -> tensor<f32>
    %v10 = stablehlo.constant dense<4.0> : tensor<f32>
    %v11 = stablehlo.divide %v9, %v10 : tensor<f32>
    %v12 = stablehlo.constant dense<1.0> : tensor<f32>
    %v13 = stablehlo.divide %v12, %v10 : tensor<f32>
    %v17 = stablehlo.constant dense<0.0> : tensor<f32>
    %v18 = stablehlo.add %v17, %v13 : tensor<f32>
    %v21 = stablehlo.broadcast_in_dim %v18, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v22_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v22 = stablehlo.broadcast_in_dim %v22_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v23 = stablehlo.add %v22, %v21 : tensor<4x1xf32>
    %v24 = stablehlo.multiply %v23, %v7 : tensor<4x1xf32>
    %v25 = stablehlo.multiply %v23, %v7 : tensor<4x1xf32>
    %v26_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v26 = stablehlo.broadcast_in_dim %v26_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v27 = stablehlo.add %v26, %v24 : tensor<4x1xf32>
    %v28 = stablehlo.add %v27, %v25 : tensor<4x1xf32>
    %v30_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v30 = stablehlo.broadcast_in_dim %v30_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v31 = stablehlo.add %v30, %v28 : tensor<4x1xf32>
    %v34_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v34 = stablehlo.broadcast_in_dim %v34_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v35 = stablehlo.add %v34, %v31 : tensor<4x1xf32>
    %v36_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v36 = stablehlo.broadcast_in_dim %v36_fill, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %v37 = stablehlo.add %v36, %v31 : tensor<4x1xf32>
    %v38_init = stablehlo.constant dense<0.0> : tensor<f32>
    %v38 = stablehlo.reduce(%v37 init: %v38_init) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x1xf32>, tensor<f32>) -> tensor<f32>
    %v39 = stablehlo.reshape %v38 : (tensor<f32>) -> tensor<1xf32>
    %v40_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v40 = stablehlo.broadcast_in_dim %v40_fill, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %v41 = stablehlo.add %v40, %v39 : tensor<1xf32>
    %v44 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
    %v45 = stablehlo.dot_general %v44, %v35, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x1xf32>) -> tensor<2x1xf32>
    %v48_fill = stablehlo.constant dense<0.0> : tensor<f32>
    %v48 = stablehlo.broadcast_in_dim %v48_fill, dims = [] : (tensor<f32>) -> tensor<2x1xf32>
    %v49 = stablehlo.add %v48, %v45 : tensor<2x1xf32>
    return %v11, %v49, %v41 : tensor<f32>, tensor<2x1xf32>, tensor<1xf32>
  }
}
