
>
inputPlaceholder*
dtype0*
shape:
>
otherPlaceholder*
dtype0*
shape:
^
wConst*
dtype0*E
value<B:"$aKÕæòÑ)øÇR˛ΩôDW>˘i?¿≠`=Kzçæ^Á»æŒ≠ø>
J
convConv2Dinputw*
T0*
paddingVALID*
strides

 
addAddconvother*
T0
:
kConst*
dtype0*!
valueB"í@Q?Y®>∑›ø

subSubaddk*
T0
>
scaleConst*
dtype0*!
valueB"ﬁPıæmÕL?j¿œ=

mulMulsubscale*
T0

sigSigmoidmul*
T0
#
addv2AddV2convconv*
T0

tanhTanhaddv2*
T0
0
leaky	LeakyRelumul*
T0*
alpha%ÕÃÃ="ø