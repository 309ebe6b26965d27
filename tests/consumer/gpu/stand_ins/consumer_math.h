// Stand-in for this workspace's CUDA math library header, for the statics gate's parse only.
#pragma once
__device__ float consumer_scale(float v, float by);
