print("diffstream")
